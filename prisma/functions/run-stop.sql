-- Stopping a step or a run: svc_fail_step (a failed attempt fails its run), svc_fail_run (a run
-- fails for a reason of its own) and svc_complete_run. REPEATABLE (see README.md). Callers:
-- services/store/hot-sql.ts for StepRepository.failStep and RunRepository.failRun/completeRun.

DROP FUNCTION IF EXISTS svc_fail_step(uuid, text, text, bigint, jsonb, int);
DROP FUNCTION IF EXISTS svc_fail_step(jsonb);
DROP FUNCTION IF EXISTS svc_fail_run(uuid, jsonb, text);
DROP FUNCTION IF EXISTS svc_fail_run(jsonb);
DROP FUNCTION IF EXISTS svc_complete_run(uuid, jsonb);
DROP FUNCTION IF EXISTS svc_complete_run(jsonb);
DROP FUNCTION IF EXISTS svc_failed_run(runs, jsonb);
DROP FUNCTION IF EXISTS svc_failed_run(runs, jsonb, text);

-- svc_failed_run(r runs, p_error jsonb, p_status text DEFAULT 'failed') RETURNS runs
-- Row r as stopped now with p_error and status p_status ('failed', or 'cancelled' for a
-- cancellation or a deadline), when it is unfinished (pending or running); otherwise r as it is
-- (a run ends once). Writes nothing: the caller writes the row with svc_store_run.
-- Locks: none.
CREATE FUNCTION svc_failed_run(r runs, p_error jsonb, p_status text DEFAULT 'failed') RETURNS runs
LANGUAGE plpgsql AS $$
BEGIN
  IF r.status IN ('pending', 'running') THEN
    r.status := p_status;
    r.error := p_error;
    r.finished_at := now();
  END IF;
  RETURN r;
END $$;

-- svc_fail_step(args jsonb) RETURNS jsonb
-- Commits a failed attempt if attempt_token still owns the step: its cost charged (clamped to
-- what it held), step failed with error, the run failed with the same error (only from
-- pending/running), the run's unstarted steps skipped. The run's other running attempts keep
-- their reservations and settle themselves when the run's abort reaches them (or the reaper
-- settles them when their workers died: RunRecoveryRepository.findOpenInStopped), except those
-- that hold nothing: no commit of theirs could charge anything, and a run that holds nothing is
-- not among the reaper's, so they are cancelled here, their cost so far charged once.
-- Input:  run_id uuid, node_id text, attempt_token text, cost_micros, error ({code, message}),
--         ms (int or null).
-- Output: committed boolean, total_micros (the step's cost over all its attempts, charged),
--         held_micros (what the attempt held), run_failed boolean, skipped (text array or null).
-- Locks:  the run row, then the step row (FOR UPDATE), then the run's pending steps and its
--         running steps that hold nothing (UPDATE), then the organization row (svc_store_run:
--         the run row written once, settled).
CREATE FUNCTION svc_fail_step(args jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  p_run uuid := svc_arg(args, 'run_id')::uuid;
  p_node text := svc_arg(args, 'node_id');
  p_token text := svc_arg(args, 'attempt_token');
  p_cost bigint := svc_arg(args, 'cost_micros')::bigint;
  p_error jsonb := args->'error';
  p_ms int := (args->>'ms')::int;
  r runs%ROWTYPE;
  nr runs%ROWTYPE;
  s record;
  done steps%ROWTYPE;
  added bigint;
  fails_run boolean;
  skipped text[];
  idle_ids uuid[];
BEGIN
  SELECT * INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF FOUND THEN
    SELECT id, reserved_micros INTO s FROM steps
    WHERE run_id = p_run AND node_id = p_node AND status = 'running' AND attempt_token = p_token FOR UPDATE;
  END IF;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('committed', false, 'total_micros', 0, 'held_micros', 0, 'run_failed', false, 'skipped', NULL);
  END IF;
  added := LEAST(p_cost, s.reserved_micros);
  fails_run := r.status IN ('pending', 'running');
  UPDATE steps SET status = 'failed', cost_micros = cost_micros + added, reserved_micros = 0, lost_charge_micros = 0, error = p_error, ms = p_ms, finished_at = now()
  WHERE id = s.id
  RETURNING * INTO done;
  -- Pending and queued steps hold no reservation (only running ones do), so nothing to release.
  WITH stopped AS (
    UPDATE steps o SET status = 'skipped', finished_at = now()
    WHERE o.run_id = p_run AND o.status IN ('pending', 'queued')
    RETURNING o.node_id
  )
  SELECT array_agg(node_id ORDER BY node_id) INTO skipped FROM stopped;
  WITH idle AS (
    UPDATE steps o SET status = 'cancelled', lost_charge_micros = 0, finished_at = now()
    WHERE o.run_id = p_run AND o.status = 'running' AND o.reserved_micros = 0 AND o.id <> s.id
    RETURNING o.id
  )
  SELECT array_agg(id) INTO idle_ids FROM idle;
  -- One write of the run row (svc_store_run): the release, the spending, the failure, the charge and the settlement.
  nr := r;
  nr.reserved_micros := r.reserved_micros - s.reserved_micros;
  nr.spent_micros := r.spent_micros + added;
  nr.charged_micros := r.charged_micros + svc_charge_ledger(p_run, r.org_id, ARRAY[done.id] || COALESCE(idle_ids, '{}'));
  PERFORM svc_store_run(r, svc_failed_run(nr, p_error));
  RETURN jsonb_build_object('committed', true, 'total_micros', done.cost_micros, 'held_micros', s.reserved_micros, 'run_failed', fails_run,
                            'skipped', to_jsonb(skipped));
END $$;

-- svc_fail_run(args jsonb) RETURNS jsonb
-- Fails a run for a reason of its own (cap or credit exhausted before a step started, a timeout,
-- ...): pending/running → failed with error. Whatever the run's status, every unfinished step is
-- stopped: running attempts become `cancelled` (their late commits are no-ops) and are charged
-- their lost charge (their cost is unknown: they may have called out), pending/queued steps
-- `skipped`, or `failed` with error for culprit_node_id (the step that could not start). Every
-- cancelled step's total is charged once. Calling it again on a failed run is harmless, and is
-- how a reaper releases a leftover reservation.
-- Input:  run_id uuid, error ({code, message}), culprit_node_id (text or null), status ('failed',
--         the default, or 'cancelled': a cancellation or a deadline; docs/runs.md, Cancellation).
-- Output: found boolean, failed boolean (this call moved the run to failed or cancelled), released_micros
--         (reservations given back), cancelled (text array), skipped (text array).
-- Locks:  the run row, then its unfinished steps in node_id order (FOR UPDATE), then the
--         organization row (svc_store_run: the run row written once, settled).
CREATE FUNCTION svc_fail_run(args jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  p_run uuid := svc_arg(args, 'run_id')::uuid;
  p_error jsonb := args->'error';
  p_culprit text := args->>'culprit_node_id';
  p_status text := COALESCE(args->>'status', 'failed');
  r runs%ROWTYPE;
  nr runs%ROWTYPE;
  st record;
  released bigint := 0;
  lost_total bigint := 0;
  lost bigint;
  cancelled text[] := '{}';
  skipped text[] := '{}';
  fails_run boolean;
BEGIN
  IF p_status NOT IN ('failed', 'cancelled') THEN
    RAISE EXCEPTION 'svc_fail_run: status must be failed or cancelled, got %', p_status;
  END IF;
  SELECT * INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('found', false, 'failed', false, 'released_micros', 0, 'cancelled', '[]'::jsonb, 'skipped', '[]'::jsonb);
  END IF;
  fails_run := r.status IN ('pending', 'running');
  FOR st IN SELECT id, node_id, status, reserved_micros, lost_charge_micros, started_at FROM steps
            WHERE run_id = p_run AND status IN ('pending', 'queued', 'running') ORDER BY node_id FOR UPDATE LOOP
    released := released + st.reserved_micros;
    IF st.status = 'running' THEN
      lost := CASE WHEN st.started_at IS NOT NULL THEN LEAST(st.lost_charge_micros, st.reserved_micros) ELSE 0 END;
      lost_total := lost_total + lost;
      UPDATE steps SET status = 'cancelled', cost_micros = cost_micros + lost, reserved_micros = 0, lost_charge_micros = 0, finished_at = now() WHERE id = st.id;
      cancelled := cancelled || st.node_id;
    ELSIF st.node_id = p_culprit THEN
      UPDATE steps SET status = 'failed', error = p_error, reserved_micros = 0, finished_at = now() WHERE id = st.id;
    ELSE
      UPDATE steps SET status = 'skipped', reserved_micros = 0, finished_at = now() WHERE id = st.id;
      skipped := skipped || st.node_id;
    END IF;
  END LOOP;
  -- One write of the run row (svc_store_run). Attempts retried or lost before the run stopped spent
  -- money: the ledger gets it now (once per step: one charged before is not charged again).
  nr := r;
  nr.reserved_micros := r.reserved_micros - released;
  nr.spent_micros := r.spent_micros + lost_total;
  nr.charged_micros := r.charged_micros
    + svc_charge_ledger(p_run, r.org_id, ARRAY(SELECT id FROM steps WHERE run_id = p_run AND status = 'cancelled' AND cost_micros > 0));
  PERFORM svc_store_run(r, svc_failed_run(nr, p_error, p_status));
  RETURN jsonb_build_object('found', true, 'failed', fails_run, 'released_micros', released, 'cancelled', to_jsonb(cancelled), 'skipped', to_jsonb(skipped));
END $$;

-- svc_complete_run(args jsonb) RETURNS jsonb
-- running → completed with its outputs; completed is true for exactly one call per run.
-- Input:  run_id uuid, outputs (JSON object).
-- Output: completed boolean.
-- Locks:  the run row (FOR UPDATE), then the organization row (svc_store_run).
CREATE FUNCTION svc_complete_run(args jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  p_run uuid := svc_arg(args, 'run_id')::uuid;
  r runs%ROWTYPE;
  nr runs%ROWTYPE;
BEGIN
  SELECT * INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF NOT FOUND OR r.status <> 'running' THEN
    RETURN jsonb_build_object('completed', false);
  END IF;
  nr := r;
  nr.status := 'completed';
  nr.outputs := args->'outputs';
  nr.finished_at := now();
  PERFORM svc_store_run(r, nr);
  RETURN jsonb_build_object('completed', true);
END $$;
