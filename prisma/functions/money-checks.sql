-- Money that can never be negative: an organization's balance and what it holds for its runs, and
-- a run's hold. REPEATABLE (see step-transitions.sql). A trigger stands in for CHECK constraints,
-- which the offline schema engine's drift check (prisma/tools) cannot introspect; it refuses the
-- statement the same way, so a bug that would overdraw a balance fails its transaction instead.

CREATE OR REPLACE FUNCTION svc_refuse_negative_money() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- Nested: PL/pgSQL resolves every field named in a condition, and runs have no balance.
  IF TG_TABLE_NAME = 'organizations' THEN
    IF NEW.balance_micros < 0 OR NEW.held_micros < 0 THEN
      RAISE EXCEPTION 'organization %: balance_micros (%) and held_micros (%) must not be negative', NEW.id, NEW.balance_micros, NEW.held_micros
        USING ERRCODE = 'check_violation';
    END IF;
  ELSIF NEW.held_micros < 0 THEN
    RAISE EXCEPTION 'run %: held_micros (%) must not be negative', NEW.id, NEW.held_micros USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER organizations_money_not_negative BEFORE INSERT OR UPDATE OF balance_micros, held_micros ON organizations
FOR EACH ROW EXECUTE FUNCTION svc_refuse_negative_money();

CREATE OR REPLACE TRIGGER runs_hold_not_negative BEFORE INSERT OR UPDATE OF held_micros ON runs
FOR EACH ROW EXECUTE FUNCTION svc_refuse_negative_money();
