-- Starting an attempt of a step: svc_reserve_step (first attempt, or taking over a lost one) and
-- svc_retry_step (the next attempt after a transient failure, by the same owner). REPEATABLE
-- (see README.md). Callers: services/store/hot-sql.ts for StepRepository (invariants there).

DROP FUNCTION IF EXISTS svc_reserve_step(uuid, text, bigint, int, text);
DROP FUNCTION IF EXISTS svc_reserve_step(uuid, text, bigint, int, text, bigint, int);
DROP FUNCTION IF EXISTS svc_reserve_step(jsonb);
DROP FUNCTION IF EXISTS svc_retry_step(uuid, text, text, bigint, bigint);
DROP FUNCTION IF EXISTS svc_retry_step(uuid, text, text, bigint, bigint, bigint, int);
DROP FUNCTION IF EXISTS svc_retry_step(jsonb);

-- svc_reserve_step(args jsonb) RETURNS jsonb
-- Starts an attempt: holds estimate_micros against the cap and the run's authorization and gives
-- the step to attempt_token. Taking over a lost attempt (running, started, not committed) first
-- charges it its lost charge, then always gives the step to attempt_token: when the new attempt
-- cannot start (verdict attempts_exhausted, cap_exceeded or insufficient_credit, with owned) it
-- holds nothing and the caller fails the step under attempt_token, which settles the charge. A
-- step that was not running is left untouched by a refusal (owned false).
-- With group_micros (a job that runs ready sibling steps after this one, inside its reservation:
-- their estimates' sum), that much more is held with the attempt when it fits too; else the
-- attempt holds its own estimate alone (group_micros null in the output) and the caller runs the
-- siblings in jobs of their own.
-- Input:  run_id uuid, node_id text, estimate_micros, stale_ms int (a running step is taken over
--         only when it started at least this long ago; 0: whenever asked), attempt_token text,
--         lost_charge_micros (what this attempt is charged if lost), max_attempts int,
--         group_micros (optional, default 0).
-- A lost attempt that had recorded its provider job (steps.provider_job for its attempt number:
-- a fal request, a Replicate prediction, submitted and not finished) is not charged when the new
-- attempt starts: the new attempt resumes that job (its outcome is the job's, charged once when it
-- settles) and the job is recorded under the new attempt's number. Refused, it is charged as lost.
-- Output: verdict ('ok' | 'run_not_running' | 'step_not_runnable' | 'attempts_exhausted' |
--         'cap_exceeded' | 'insufficient_credit'), attempt (int, null unless owned), owned boolean,
--         group_micros (what was held for the siblings: the asked amount, or null when it did
--         not fit or the attempt did not start), provider_job (the job to resume, or null).
-- Locks:  the run row, then the step row (FOR UPDATE). No ledger entry, no organization row.
CREATE FUNCTION svc_reserve_step(args jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  p_run uuid := svc_arg(args, 'run_id')::uuid;
  p_node text := svc_arg(args, 'node_id');
  p_estimate bigint := svc_arg(args, 'estimate_micros')::bigint;
  p_stale_ms int := svc_arg(args, 'stale_ms')::int;
  p_token text := svc_arg(args, 'attempt_token');
  p_lost_charge bigint := svc_arg(args, 'lost_charge_micros')::bigint;
  p_max_attempts int := svc_arg(args, 'max_attempts')::int;
  p_group bigint := COALESCE((args->>'group_micros')::bigint, 0);
  r record;
  s record;
  lost bigint;
  resumed jsonb;
  others bigint;
  verdict text;
  held bigint;
  group_held bigint;
  new_attempt int;
BEGIN
  SELECT status, cap_micros, authorized_micros, reserved_micros, spent_micros INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF NOT FOUND OR r.status <> 'running' THEN
    RETURN jsonb_build_object('verdict', 'run_not_running', 'attempt', NULL, 'owned', false);
  END IF;
  SELECT id, status, pending_deps, reserved_micros, lost_charge_micros, started_at, attempt, provider_job INTO s
  FROM steps WHERE run_id = p_run AND node_id = p_node FOR UPDATE;
  IF NOT FOUND OR s.pending_deps <> 0 OR NOT (s.status IN ('pending', 'queued')
      OR (s.status = 'running' AND (p_stale_ms <= 0 OR s.started_at <= now() - p_stale_ms * interval '1 millisecond'))) THEN
    RETURN jsonb_build_object('verdict', 'step_not_runnable', 'attempt', NULL, 'owned', false);
  END IF;
  -- A step reserved with its run and never started by a worker (started_at null) called nothing.
  lost := CASE WHEN s.status = 'running' AND s.started_at IS NOT NULL THEN LEAST(s.lost_charge_micros, s.reserved_micros) ELSE 0 END;
  -- The lost attempt's provider job goes on under the new attempt, which pays for it once: no lost charge.
  resumed := CASE WHEN lost > 0 AND s.provider_job IS NOT NULL AND (s.provider_job->>'attempt')::int = s.attempt THEN s.provider_job ELSE NULL END;
  others := r.reserved_micros - s.reserved_micros;
  verdict := CASE WHEN s.attempt >= p_max_attempts THEN 'attempts_exhausted'
                  WHEN r.spent_micros + CASE WHEN resumed IS NULL THEN lost ELSE 0 END + others + p_estimate > r.cap_micros THEN 'cap_exceeded'
                  WHEN r.spent_micros + CASE WHEN resumed IS NULL THEN lost ELSE 0 END + others + p_estimate > COALESCE(r.authorized_micros, r.cap_micros) THEN 'insufficient_credit'
                  ELSE 'ok' END;
  IF verdict = 'ok' AND resumed IS NOT NULL THEN
    lost := 0;
  ELSE
    resumed := NULL;
  END IF;
  IF verdict <> 'ok' AND s.status <> 'running' THEN
    RETURN jsonb_build_object('verdict', verdict, 'attempt', NULL, 'owned', false);
  END IF;
  IF verdict = 'ok' AND r.spent_micros + lost + others + p_estimate + p_group <= LEAST(r.cap_micros, COALESCE(r.authorized_micros, r.cap_micros)) THEN
    group_held := p_group;
  END IF;
  held := CASE WHEN verdict = 'ok' THEN p_estimate + COALESCE(group_held, 0) ELSE 0 END;
  UPDATE runs SET reserved_micros = others + held, spent_micros = spent_micros + lost WHERE id = p_run;
  UPDATE steps SET status = 'running', attempt = steps.attempt + CASE WHEN verdict = 'ok' THEN 1 ELSE 0 END, attempt_token = p_token,
                   reserved_micros = held, lost_charge_micros = CASE WHEN verdict = 'ok' THEN LEAST(p_lost_charge, p_estimate) ELSE 0 END,
                   cost_micros = steps.cost_micros + lost, started_at = now(), finished_at = NULL,
                   provider_job = CASE WHEN resumed IS NULL THEN NULL ELSE jsonb_set(resumed, '{attempt}', to_jsonb(steps.attempt + 1)) END
  WHERE id = s.id
  RETURNING steps.attempt INTO new_attempt;
  RETURN jsonb_build_object('verdict', verdict, 'attempt', new_attempt, 'owned', true, 'group_micros', group_held, 'provider_job', resumed->'job');
END $$;

-- svc_retry_step(args jsonb) RETURNS jsonb
-- Another attempt after a transient failure, by the same owner: the failed attempt's cost
-- (clamped to what it held) becomes spending, the next attempt holds estimate_micros; refused
-- (nothing changes) when the step has had max_attempts attempts or the next would not fit in the
-- cap or the run's authorization. The ledger is charged when the step settles, not here.
-- Input:  run_id uuid, node_id text, attempt_token text (the owner), cost_micros (of the failed
--         attempt), estimate_micros (of the next), lost_charge_micros (of the next), max_attempts int.
-- Output: verdict ('ok' | 'run_not_running' | 'not_owner' | 'attempts_exhausted' | 'cap_exceeded'
--         | 'insufficient_credit'), attempt (int when ok, else null). A token the step no longer
--         carries is 'not_owner' whether or not the run still runs; the step's own token on a run
--         that stopped is 'run_not_running'.
-- Locks:  the run row, then the step row (FOR UPDATE).
CREATE FUNCTION svc_retry_step(args jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  p_run uuid := svc_arg(args, 'run_id')::uuid;
  p_node text := svc_arg(args, 'node_id');
  p_token text := svc_arg(args, 'attempt_token');
  p_cost bigint := svc_arg(args, 'cost_micros')::bigint;
  p_estimate bigint := svc_arg(args, 'estimate_micros')::bigint;
  p_lost_charge bigint := svc_arg(args, 'lost_charge_micros')::bigint;
  p_max_attempts int := svc_arg(args, 'max_attempts')::int;
  r record;
  s record;
  added bigint;
  total bigint;
  new_attempt int;
BEGIN
  SELECT status, cap_micros, authorized_micros, reserved_micros, spent_micros INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('verdict', 'run_not_running', 'attempt', NULL);
  END IF;
  IF r.status <> 'running' THEN
    -- A stale attempt (its step was taken over, its token replaced) is told so even once the run
    -- has ended, so that its worker reports a dropped result rather than a stopped run.
    IF NOT EXISTS (SELECT 1 FROM steps WHERE run_id = p_run AND node_id = p_node AND attempt_token = p_token) THEN
      RETURN jsonb_build_object('verdict', 'not_owner', 'attempt', NULL);
    END IF;
    RETURN jsonb_build_object('verdict', 'run_not_running', 'attempt', NULL);
  END IF;
  SELECT id, reserved_micros, attempt INTO s FROM steps
  WHERE run_id = p_run AND node_id = p_node AND status = 'running' AND attempt_token = p_token FOR UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('verdict', 'not_owner', 'attempt', NULL);
  END IF;
  IF s.attempt >= p_max_attempts THEN
    RETURN jsonb_build_object('verdict', 'attempts_exhausted', 'attempt', NULL);
  END IF;
  added := LEAST(p_cost, s.reserved_micros);
  total := r.spent_micros + added + r.reserved_micros - s.reserved_micros + p_estimate;
  IF total > r.cap_micros THEN
    RETURN jsonb_build_object('verdict', 'cap_exceeded', 'attempt', NULL);
  END IF;
  IF total > COALESCE(r.authorized_micros, r.cap_micros) THEN
    RETURN jsonb_build_object('verdict', 'insufficient_credit', 'attempt', NULL);
  END IF;
  UPDATE runs SET spent_micros = spent_micros + added, reserved_micros = reserved_micros - s.reserved_micros + p_estimate WHERE id = p_run;
  UPDATE steps SET cost_micros = cost_micros + added, reserved_micros = p_estimate, lost_charge_micros = LEAST(p_lost_charge, p_estimate),
                   attempt = steps.attempt + 1, started_at = now()
  WHERE id = s.id
  RETURNING steps.attempt INTO new_attempt;
  RETURN jsonb_build_object('verdict', 'ok', 'attempt', new_attempt);
END $$;
