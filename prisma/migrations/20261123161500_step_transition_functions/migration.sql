-- The money-moving step transitions as functions, so that each is one round trip (one statement,
-- hence one transaction) instead of an interactive transaction of four or five. They keep the lock
-- protocol of services/store/run-lock.ts: the run row first (FOR UPDATE), then its steps, then the
-- organization row (through the ledger charge). In PL/pgSQL under READ COMMITTED every statement
-- takes a fresh snapshot, so the statements after the run's lock see its steps as they really are.
-- Callers: services/store/step-repository.ts. Invariants: see that file.

-- Charges a step's total cost to its organization once: one `run_charge` entry per step, and the
-- organization's running balance moved by the same amount in the same transaction.
CREATE FUNCTION svc_charge_step(p_org uuid, p_run uuid, p_step uuid, p_note text, p_cost bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  charged bigint;
BEGIN
  IF p_cost <= 0 THEN
    RETURN;
  END IF;
  INSERT INTO ledger_entries (org_id, amount_micros, kind, run_id, step_id, note)
  VALUES (p_org, -p_cost, 'run_charge', p_run, p_step, p_note)
  ON CONFLICT (step_id, kind) DO NOTHING
  RETURNING amount_micros INTO charged;
  IF FOUND THEN
    UPDATE organizations SET balance_micros = balance_micros + charged WHERE id = p_org;
  END IF;
END $$;

-- Starts an attempt: holds p_estimate against the cap and gives the step to p_token.
CREATE FUNCTION svc_reserve_step(p_run uuid, p_node text, p_estimate bigint, p_stale_ms int, p_token text)
RETURNS TABLE (out_verdict text, out_attempt int)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  s record;
BEGIN
  SELECT status, cap_micros, reserved_micros, spent_micros INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF NOT FOUND OR r.status <> 'running' THEN
    RETURN QUERY SELECT 'run_not_running'::text, NULL::int;
    RETURN;
  END IF;
  SELECT id, status, pending_deps, reserved_micros, started_at INTO s FROM steps WHERE run_id = p_run AND node_id = p_node FOR UPDATE;
  IF NOT FOUND OR s.pending_deps <> 0 OR NOT (s.status IN ('pending', 'queued')
      OR (s.status = 'running' AND (p_stale_ms <= 0 OR s.started_at <= now() - p_stale_ms * interval '1 millisecond'))) THEN
    RETURN QUERY SELECT 'step_not_runnable'::text, NULL::int;
    RETURN;
  END IF;
  IF r.spent_micros + r.reserved_micros - s.reserved_micros + p_estimate > r.cap_micros THEN
    RETURN QUERY SELECT 'cap_exceeded'::text, NULL::int;
    RETURN;
  END IF;
  -- Taking over a crashed attempt releases what it held.
  UPDATE runs SET reserved_micros = reserved_micros - s.reserved_micros + p_estimate WHERE id = p_run;
  RETURN QUERY
    UPDATE steps SET status = 'running', attempt = steps.attempt + 1, attempt_token = p_token, reserved_micros = p_estimate,
                     started_at = now(), finished_at = NULL
    WHERE id = s.id
    RETURNING 'ok'::text, steps.attempt;
END $$;

-- Another attempt after a transient failure, by the same owner: the failed attempt's cost becomes
-- spending, the next attempt holds p_estimate; refused when it would not fit in the cap.
CREATE FUNCTION svc_retry_step(p_run uuid, p_node text, p_token text, p_cost bigint, p_estimate bigint)
RETURNS TABLE (out_verdict text, out_attempt int)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  s record;
  added bigint;
BEGIN
  SELECT status, cap_micros, reserved_micros, spent_micros INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF NOT FOUND OR r.status <> 'running' THEN
    RETURN QUERY SELECT 'run_not_running'::text, NULL::int;
    RETURN;
  END IF;
  SELECT id, reserved_micros INTO s FROM steps
  WHERE run_id = p_run AND node_id = p_node AND status = 'running' AND attempt_token = p_token FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_owner'::text, NULL::int;
    RETURN;
  END IF;
  added := LEAST(p_cost, s.reserved_micros);
  IF r.spent_micros + added + r.reserved_micros - s.reserved_micros + p_estimate > r.cap_micros THEN
    RETURN QUERY SELECT 'cap_exceeded'::text, NULL::int;
    RETURN;
  END IF;
  UPDATE runs SET spent_micros = spent_micros + added, reserved_micros = reserved_micros - s.reserved_micros + p_estimate WHERE id = p_run;
  RETURN QUERY
    UPDATE steps SET cost_micros = cost_micros + added, reserved_micros = p_estimate, attempt = steps.attempt + 1, started_at = now()
    WHERE id = s.id
    RETURNING 'ok'::text, steps.attempt;
END $$;

-- Commits a finished attempt if p_token still owns the step: step completed, reservation turned
-- into spending (the cost clamped to it), the step's total charged once, dependents unblocked.
-- When this was the run's last unfinished step and the caller already knows the run's outputs
-- (p_run_outputs not null: they read only this step), the run is completed in the same call.
-- When the caller names a dependent it will run next (p_next_node, with its estimate and a new
-- attempt token) and that dependent became ready, its attempt is reserved in the same call, as
-- svc_reserve_step would: a chain step costs one round trip. out_next_verdict: 'ok' (reserved,
-- out_next_attempt), 'cap_exceeded' (nothing held), or null (not ready, or no p_next_node).
CREATE FUNCTION svc_complete_step(p_run uuid, p_node text, p_token text, p_cost bigint, p_output jsonb, p_ms int, p_dependents text[],
                                  p_run_outputs jsonb, p_next_node text, p_next_estimate bigint, p_next_token text)
RETURNS TABLE (out_committed boolean, out_total bigint, out_held bigint, out_ready text[], out_remaining int, out_run_completed boolean,
               out_next_verdict text, out_next_attempt int)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  s record;
  added bigint;
  total bigint;
  ready text[];
  remaining int;
  completes_run boolean;
  new_reserved bigint;
  next_verdict text;
  next_attempt int;
BEGIN
  SELECT org_id, status, cap_micros, reserved_micros, spent_micros INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, 0::bigint, 0::bigint, NULL::text[], -1, false, NULL::text, NULL::int;
    RETURN;
  END IF;
  SELECT id, reserved_micros INTO s FROM steps
  WHERE run_id = p_run AND node_id = p_node AND status = 'running' AND attempt_token = p_token FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, 0::bigint, 0::bigint, NULL::text[], -1, false, NULL::text, NULL::int;
    RETURN;
  END IF;
  added := LEAST(p_cost, s.reserved_micros);
  UPDATE steps SET status = 'completed', cost_micros = cost_micros + added, reserved_micros = 0, output = p_output, ms = p_ms,
                   error = NULL, finished_at = now()
  WHERE id = s.id
  RETURNING cost_micros INTO total;
  new_reserved := r.reserved_micros - s.reserved_micros;
  WITH unblocked AS (
    UPDATE steps d SET pending_deps = d.pending_deps - 1
    WHERE d.run_id = p_run AND d.node_id = ANY(p_dependents) AND d.pending_deps > 0
    RETURNING d.node_id, d.pending_deps, d.status
  )
  SELECT array_agg(node_id ORDER BY node_id) FILTER (WHERE pending_deps = 0 AND status IN ('pending', 'queued')) INTO ready FROM unblocked;
  SELECT count(*) INTO remaining FROM steps WHERE run_id = p_run AND status <> 'completed';
  PERFORM svc_charge_step(r.org_id, p_run, s.id, 'step ' || p_node, total);
  completes_run := remaining = 0 AND p_run_outputs IS NOT NULL AND r.status = 'running';
  IF p_next_node IS NOT NULL AND r.status = 'running' AND p_next_node = ANY(ready) THEN
    -- A ready step holds nothing yet (only running ones do): the cap check adds its whole estimate.
    IF r.spent_micros + added + new_reserved + p_next_estimate > r.cap_micros THEN
      next_verdict := 'cap_exceeded';
    ELSE
      new_reserved := new_reserved + p_next_estimate;
      UPDATE steps SET status = 'running', attempt = attempt + 1, attempt_token = p_next_token, reserved_micros = p_next_estimate,
                       started_at = now(), finished_at = NULL
      WHERE run_id = p_run AND node_id = p_next_node
      RETURNING attempt INTO next_attempt;
      next_verdict := 'ok';
    END IF;
  END IF;
  -- One write of the run row: the settlement, the next reservation and, after the last step, the completion.
  IF completes_run THEN
    UPDATE runs SET reserved_micros = new_reserved, spent_micros = spent_micros + added,
                    status = 'completed', outputs = p_run_outputs, finished_at = now()
    WHERE id = p_run;
  ELSE
    UPDATE runs SET reserved_micros = new_reserved, spent_micros = spent_micros + added WHERE id = p_run;
  END IF;
  -- A failed or cancelled run's dependents are skipped already: nothing becomes ready there.
  RETURN QUERY SELECT true, total, s.reserved_micros, CASE WHEN r.status = 'running' THEN ready END, remaining, completes_run,
                      next_verdict, next_attempt;
END $$;

-- Commits a failed attempt if p_token still owns the step: its cost charged (clamped to what it
-- held), step failed with p_error, the run failed with the same error (only from pending/running),
-- the run's unstarted steps skipped.
CREATE FUNCTION svc_fail_step(p_run uuid, p_node text, p_token text, p_cost bigint, p_error jsonb, p_ms int)
RETURNS TABLE (out_committed boolean, out_total bigint, out_held bigint, out_run_failed boolean, out_skipped text[])
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  s record;
  added bigint;
  total bigint;
  fails_run boolean;
  skipped text[];
BEGIN
  SELECT org_id, status INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, 0::bigint, 0::bigint, false, NULL::text[];
    RETURN;
  END IF;
  SELECT id, reserved_micros INTO s FROM steps
  WHERE run_id = p_run AND node_id = p_node AND status = 'running' AND attempt_token = p_token FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, 0::bigint, 0::bigint, false, NULL::text[];
    RETURN;
  END IF;
  added := LEAST(p_cost, s.reserved_micros);
  fails_run := r.status IN ('pending', 'running');
  UPDATE steps SET status = 'failed', cost_micros = cost_micros + added, reserved_micros = 0, error = p_error, ms = p_ms, finished_at = now()
  WHERE id = s.id
  RETURNING cost_micros INTO total;
  UPDATE runs SET reserved_micros = reserved_micros - s.reserved_micros, spent_micros = spent_micros + added,
                  status = CASE WHEN fails_run THEN 'failed' ELSE status END,
                  error = CASE WHEN fails_run THEN p_error ELSE error END,
                  finished_at = CASE WHEN fails_run THEN now() ELSE finished_at END
  WHERE id = p_run;
  -- Pending and queued steps hold no reservation (only running ones do), so nothing to release.
  WITH stopped AS (
    UPDATE steps o SET status = 'skipped', finished_at = now()
    WHERE o.run_id = p_run AND o.status IN ('pending', 'queued')
    RETURNING o.node_id
  )
  SELECT array_agg(node_id ORDER BY node_id) INTO skipped FROM stopped;
  PERFORM svc_charge_step(r.org_id, p_run, s.id, 'step ' || p_node, total);
  RETURN QUERY SELECT true, total, s.reserved_micros, fails_run, skipped;
END $$;
