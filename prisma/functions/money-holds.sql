-- A run's hold on its organization's balance and a step's charge to the ledger (docs/money.md):
-- the internal helpers of step-reserve.sql, step-complete.sql and run-stop.sql. REPEATABLE (see
-- README.md). A run may spend up to LEAST(cap_micros, authorized_micros), the hold it took on its
-- organization's balance when it was stored (null: a run from before holds, capped only by its cap).

DROP FUNCTION IF EXISTS svc_run_hold(text, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS svc_run_hold(runs);
DROP FUNCTION IF EXISTS svc_sync_hold(uuid);
DROP FUNCTION IF EXISTS svc_charge_step(uuid, uuid, uuid, text, bigint);
DROP FUNCTION IF EXISTS svc_charge_step(steps);
DROP FUNCTION IF EXISTS svc_charge_steps(uuid, uuid[]);
DROP FUNCTION IF EXISTS svc_settle_run(runs, bigint, bigint);
DROP FUNCTION IF EXISTS svc_org_balance(uuid);
DROP FUNCTION IF EXISTS svc_release_locks_before_flush();

-- svc_run_hold(r runs) RETURNS bigint
-- What run r holds of its organization's balance: an unfinished run what it is authorized for
-- less what it was charged; a finished one only what its still-running attempts may yet be
-- charged (reserved, plus spending not charged yet). Null authorization (a run from before
-- holds): 0. Reads only r (the caller may pass a row with amounts it is about to write).
-- Locks: none.
CREATE FUNCTION svc_run_hold(r runs) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN r.authorized_micros IS NULL THEN 0
              ELSE GREATEST(0, CASE WHEN r.status IN ('pending', 'running') THEN r.authorized_micros
                                    ELSE r.reserved_micros + r.spent_micros END - r.charged_micros) END
$$;

-- svc_charge_steps(p_run uuid, p_steps uuid[]) RETURNS void
-- Charges each step of run p_run named in p_steps its total cost (cost_micros as the caller just
-- wrote it) once: one `run_charge` ledger entry per step (unique on (step_id, kind); a step
-- charged before is left as it is), and the run's charged total and hold moved in one update of
-- its row, whatever the number of steps (a commit of a batch charges its up to 129 steps with
-- two writes, not one of each row per step: every write of a row adds a version that later reads
-- of it in the transaction walk). The organization's row is left alone while the run is
-- unfinished and its hold falls by exactly what it was charged (Deferred settlement in
-- docs/money.md: the row still counts the charge in held_micros, so balance less held, what
-- admission reads, is already right, and the organization's concurrent runs do not queue on its
-- row at every commit); otherwise the run is settled now (svc_settle_run). svc_sync_hold,
-- called last by the caller, settles any status change.
-- Locks: the run row must be locked by the caller; updates (so locks) the organization row only
-- when it settles.
CREATE FUNCTION svc_charge_steps(p_run uuid, p_steps uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  charged bigint;
  old runs%ROWTYPE;
  r runs%ROWTYPE;
  new_hold bigint;
BEGIN
  SELECT * INTO old FROM runs WHERE id = p_run;
  r := old;
  WITH entries AS (
    INSERT INTO ledger_entries (org_id, amount_micros, kind, run_id, step_id, note)
    SELECT r.org_id, -s.cost_micros, 'run_charge', s.run_id, s.id, 'step ' || s.node_id
    FROM steps s WHERE s.id = ANY(p_steps) AND s.run_id = p_run AND s.cost_micros > 0
    ON CONFLICT (step_id, kind) DO NOTHING
    RETURNING amount_micros)
  SELECT sum(amount_micros) INTO charged FROM entries;
  IF charged IS NULL THEN
    RETURN;
  END IF;
  r.charged_micros := r.charged_micros - charged;
  new_hold := svc_run_hold(r);
  IF r.authorized_micros IS NOT NULL AND r.status IN ('pending', 'running') AND new_hold + r.charged_micros = old.held_micros + old.charged_micros THEN
    UPDATE runs SET charged_micros = r.charged_micros, held_micros = new_hold WHERE id = r.id;
  ELSE
    PERFORM svc_settle_run(old, new_hold, r.charged_micros);
  END IF;
END $$;

-- svc_release_locks_before_flush() RETURNS void
-- Makes the calling transaction commit without waiting for its WAL to reach the disk, so the row
-- locks it holds (the organization's one row, which every creation and settlement of the
-- organization's runs writes) are released at once rather than after an fsync: the next writer of
-- the row waits for this transaction's work, not for its flush. Durability is the caller's:
-- services/store/hot-sql.ts reads svc.flush_after_commit with the answer and commits a transaction
-- that writes WAL and waits for its flush (WAL is flushed in order, so that flush covers this
-- commit) before it returns. Nothing
-- is acknowledged, published or enqueued before then; a crash in between loses the transaction as
-- a whole, as a crash before a synchronous commit's fsync would.
-- Locks: none.
CREATE FUNCTION svc_release_locks_before_flush() RETURNS void
LANGUAGE sql AS $$
  -- svc.flush_after_commit tells the caller (the session's own synchronous_commit may be off already).
  SELECT set_config('synchronous_commit', 'off', true), set_config('svc.flush_after_commit', 'on', true)
$$;

-- svc_settle_run(old runs, p_new_hold bigint, p_charged bigint) RETURNS void
-- Writes run old.id's new hold and charged total, and brings its organization's row up to date
-- with the run: before, the row counted the run's hold (old.held_micros) and its deferred charges
-- (old.charged_micros - old.settled_micros) in held_micros, and only old.settled_micros of its
-- charges in balance_micros; afterwards it counts p_new_hold, and all p_charged in the balance.
-- Locks: the run row must be locked by the caller; updates (so locks) the organization row.
CREATE FUNCTION svc_settle_run(old runs, p_new_hold bigint, p_charged bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM svc_release_locks_before_flush();
  UPDATE runs SET charged_micros = p_charged, held_micros = p_new_hold, settled_micros = p_charged WHERE id = old.id;
  UPDATE organizations
  SET balance_micros = balance_micros - (p_charged - old.settled_micros),
      held_micros = held_micros + p_new_hold - old.held_micros - (old.charged_micros - old.settled_micros)
  WHERE id = old.org_id;
END $$;

-- svc_charge_step(s steps) RETURNS void
-- svc_charge_steps for the one step s (as the caller just wrote it).
-- Locks: as svc_charge_steps.
CREATE FUNCTION svc_charge_step(s steps) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF s.cost_micros > 0 THEN
    PERFORM svc_charge_steps(s.run_id, ARRAY[s.id]);
  END IF;
END $$;

-- svc_sync_hold(p_run_id uuid) RETURNS void
-- Brings the run's share of its organization's row up to date after a change of its status or
-- amounts (call it last): its hold, and, once it is finished, the charges it deferred.
-- Locks: the run row must be locked by the caller; updates the organization row when the hold
-- moved or a finished run has deferred charges.
CREATE FUNCTION svc_sync_hold(p_run_id uuid) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  r runs%ROWTYPE;
  new_hold bigint;
BEGIN
  SELECT * INTO r FROM runs WHERE id = p_run_id;
  IF NOT FOUND OR r.authorized_micros IS NULL THEN
    RETURN;
  END IF;
  new_hold := svc_run_hold(r);
  IF new_hold <> r.held_micros OR (r.charged_micros <> r.settled_micros AND r.status NOT IN ('pending', 'running')) THEN
    PERFORM svc_settle_run(r, new_hold, r.charged_micros);
  END IF;
END $$;

-- svc_org_balance(p_org uuid) RETURNS bigint
-- The organization's balance: its row's balance_micros less what its unfinished runs have been
-- charged that the row does not show yet (deferred until each finishes; svc_charge_steps). Null
-- when the organization does not exist. A finished run has none deferred (svc_sync_hold settles
-- it in the transaction that finishes it), so only the unfinished ones are read.
-- Locks: none.
CREATE FUNCTION svc_org_balance(p_org uuid) RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT o.balance_micros - COALESCE((SELECT sum(r.charged_micros - r.settled_micros) FROM runs r
                                       WHERE r.org_id = o.id AND r.status IN ('pending', 'running')), 0)::bigint
  FROM organizations o WHERE o.id = p_org
$$;
