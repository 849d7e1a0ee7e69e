-- The money-moving transitions of runs and steps, one Postgres function each, so that each is one
-- round trip (one statement, hence one transaction). REPEATABLE: the migration runner
-- (services/store/migration-runner.ts) applies this file after the migrations whenever its
-- checksum changes, so edit it in place; every function it defines, under every signature it
-- ever had, is dropped first.
--
-- Locks: the run row first (FOR UPDATE), then its steps, then the organization row (through
-- svc_charge_step and svc_sync_hold), as services/store/run-lock.ts describes. In PL/pgSQL under
-- READ COMMITTED every statement takes a fresh snapshot, so the statements after the run's lock
-- see its steps as they really are. Callers: services/store/step-repository.ts and
-- run-repository.ts; invariants: step-repository.ts.
--
-- Money (docs/money.md): a run may spend up to LEAST(cap_micros, authorized_micros), the hold it
-- took on its organization's balance when it was stored (null: a run from before holds, capped
-- only by its cap). An attempt that may have called out and whose cost is unknown (its worker
-- died, or the run stopped under it) is charged steps.lost_charge_micros, set when it started.

DROP FUNCTION IF EXISTS svc_charge_step(uuid, uuid, uuid, text, bigint);
DROP FUNCTION IF EXISTS svc_sync_hold(uuid);
DROP FUNCTION IF EXISTS svc_run_hold(text, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS svc_reserve_step(uuid, text, bigint, int, text);
DROP FUNCTION IF EXISTS svc_reserve_step(uuid, text, bigint, int, text, bigint, int);
DROP FUNCTION IF EXISTS svc_retry_step(uuid, text, text, bigint, bigint);
DROP FUNCTION IF EXISTS svc_retry_step(uuid, text, text, bigint, bigint, bigint, int);
DROP FUNCTION IF EXISTS svc_complete_step(uuid, text, text, bigint, jsonb, int, text[], jsonb, text, bigint, text, jsonb, boolean);
DROP FUNCTION IF EXISTS svc_fail_step(uuid, text, text, bigint, jsonb, int);
DROP FUNCTION IF EXISTS svc_fail_run(uuid, jsonb, text);
DROP FUNCTION IF EXISTS svc_complete_run(uuid, jsonb);

-- What a run holds of its organization's balance: an unfinished run what it is authorized for less
-- what it was charged; a finished one only what its still-running attempts may yet be charged
-- (reserved, plus spending not charged yet). Null authorization (a run from before holds): 0.
CREATE FUNCTION svc_run_hold(p_status text, p_authorized bigint, p_reserved bigint, p_spent bigint, p_charged bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_authorized IS NULL THEN 0
              ELSE GREATEST(0, CASE WHEN p_status IN ('pending', 'running') THEN p_authorized ELSE p_reserved + p_spent END - p_charged) END
$$;

-- Charges a step's total cost to its organization once: one `run_charge` entry per step; the
-- organization's balance, the run's charged total and the hold they share moved in one update each
-- (the run row is locked by the caller; svc_sync_hold, called last, settles any status change).
CREATE FUNCTION svc_charge_step(p_org uuid, p_run uuid, p_step uuid, p_note text, p_cost bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  charged bigint;
  r record;
  new_hold bigint;
BEGIN
  IF p_cost <= 0 THEN
    RETURN;
  END IF;
  INSERT INTO ledger_entries (org_id, amount_micros, kind, run_id, step_id, note)
  VALUES (p_org, -p_cost, 'run_charge', p_run, p_step, p_note)
  ON CONFLICT (step_id, kind) DO NOTHING
  RETURNING amount_micros INTO charged;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT status, authorized_micros, held_micros, spent_micros, reserved_micros, charged_micros INTO r FROM runs WHERE id = p_run;
  new_hold := svc_run_hold(r.status, r.authorized_micros, r.reserved_micros, r.spent_micros, r.charged_micros - charged);
  UPDATE runs SET charged_micros = charged_micros - charged, held_micros = new_hold WHERE id = p_run;
  UPDATE organizations SET balance_micros = balance_micros + charged, held_micros = held_micros + (new_hold - r.held_micros) WHERE id = p_org;
END $$;

-- Brings the run's share of its organization's held_micros up to date (call last, the run locked),
-- after a change of its status or amounts.
CREATE FUNCTION svc_sync_hold(p_run uuid) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  new_hold bigint;
BEGIN
  SELECT org_id, status, authorized_micros, held_micros, spent_micros, reserved_micros, charged_micros INTO r FROM runs WHERE id = p_run;
  IF NOT FOUND OR r.authorized_micros IS NULL THEN
    RETURN;
  END IF;
  new_hold := svc_run_hold(r.status, r.authorized_micros, r.reserved_micros, r.spent_micros, r.charged_micros);
  IF new_hold <> r.held_micros THEN
    UPDATE runs SET held_micros = new_hold WHERE id = p_run;
    UPDATE organizations SET held_micros = held_micros + (new_hold - r.held_micros) WHERE id = r.org_id;
  END IF;
END $$;

-- Starts an attempt: holds p_estimate against the cap and the run's authorization and gives the
-- step to p_token. Taking over a lost attempt (running, started, not committed) first charges it
-- its lost charge, then always gives the step to p_token: when the new attempt cannot start
-- (out_verdict attempts_exhausted, cap_exceeded or insufficient_credit, with out_owned) it holds
-- nothing and the caller fails the step under p_token, which settles the charge. A step that was
-- not running is left untouched by a refusal (out_owned false).
CREATE FUNCTION svc_reserve_step(p_run uuid, p_node text, p_estimate bigint, p_stale_ms int, p_token text, p_lost_charge bigint, p_max_attempts int)
RETURNS TABLE (out_verdict text, out_attempt int, out_owned boolean)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  s record;
  lost bigint;
  others bigint;
  verdict text;
  held bigint;
BEGIN
  SELECT status, cap_micros, authorized_micros, reserved_micros, spent_micros INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF NOT FOUND OR r.status <> 'running' THEN
    RETURN QUERY SELECT 'run_not_running'::text, NULL::int, false;
    RETURN;
  END IF;
  SELECT id, status, pending_deps, reserved_micros, lost_charge_micros, started_at, attempt INTO s
  FROM steps WHERE run_id = p_run AND node_id = p_node FOR UPDATE;
  IF NOT FOUND OR s.pending_deps <> 0 OR NOT (s.status IN ('pending', 'queued')
      OR (s.status = 'running' AND (p_stale_ms <= 0 OR s.started_at <= now() - p_stale_ms * interval '1 millisecond'))) THEN
    RETURN QUERY SELECT 'step_not_runnable'::text, NULL::int, false;
    RETURN;
  END IF;
  -- A step reserved with its run and never started by a worker (started_at null) called nothing.
  lost := CASE WHEN s.status = 'running' AND s.started_at IS NOT NULL THEN LEAST(s.lost_charge_micros, s.reserved_micros) ELSE 0 END;
  others := r.reserved_micros - s.reserved_micros;
  verdict := CASE WHEN s.attempt >= p_max_attempts THEN 'attempts_exhausted'
                  WHEN r.spent_micros + lost + others + p_estimate > r.cap_micros THEN 'cap_exceeded'
                  WHEN r.spent_micros + lost + others + p_estimate > COALESCE(r.authorized_micros, r.cap_micros) THEN 'insufficient_credit'
                  ELSE 'ok' END;
  IF verdict <> 'ok' AND s.status <> 'running' THEN
    RETURN QUERY SELECT verdict, NULL::int, false;
    RETURN;
  END IF;
  held := CASE WHEN verdict = 'ok' THEN p_estimate ELSE 0 END;
  UPDATE runs SET reserved_micros = others + held, spent_micros = spent_micros + lost WHERE id = p_run;
  RETURN QUERY
    UPDATE steps SET status = 'running', attempt = steps.attempt + CASE WHEN verdict = 'ok' THEN 1 ELSE 0 END, attempt_token = p_token,
                     reserved_micros = held, lost_charge_micros = CASE WHEN verdict = 'ok' THEN LEAST(p_lost_charge, p_estimate) ELSE 0 END,
                     cost_micros = steps.cost_micros + lost, started_at = now(), finished_at = NULL
    WHERE id = s.id
    RETURNING verdict, steps.attempt, true;
END $$;

-- Another attempt after a transient failure, by the same owner: the failed attempt's cost becomes
-- spending, the next attempt holds p_estimate; refused (nothing changes) when the step has had
-- p_max_attempts attempts or the next would not fit in the cap or the run's authorization.
CREATE FUNCTION svc_retry_step(p_run uuid, p_node text, p_token text, p_cost bigint, p_estimate bigint, p_lost_charge bigint, p_max_attempts int)
RETURNS TABLE (out_verdict text, out_attempt int)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  s record;
  added bigint;
  total bigint;
BEGIN
  SELECT status, cap_micros, authorized_micros, reserved_micros, spent_micros INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF NOT FOUND OR r.status <> 'running' THEN
    RETURN QUERY SELECT 'run_not_running'::text, NULL::int;
    RETURN;
  END IF;
  SELECT id, reserved_micros, attempt INTO s FROM steps
  WHERE run_id = p_run AND node_id = p_node AND status = 'running' AND attempt_token = p_token FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_owner'::text, NULL::int;
    RETURN;
  END IF;
  IF s.attempt >= p_max_attempts THEN
    RETURN QUERY SELECT 'attempts_exhausted'::text, NULL::int;
    RETURN;
  END IF;
  added := LEAST(p_cost, s.reserved_micros);
  total := r.spent_micros + added + r.reserved_micros - s.reserved_micros + p_estimate;
  IF total > r.cap_micros THEN
    RETURN QUERY SELECT 'cap_exceeded'::text, NULL::int;
    RETURN;
  END IF;
  IF total > COALESCE(r.authorized_micros, r.cap_micros) THEN
    RETURN QUERY SELECT 'insufficient_credit'::text, NULL::int;
    RETURN;
  END IF;
  UPDATE runs SET spent_micros = spent_micros + added, reserved_micros = reserved_micros - s.reserved_micros + p_estimate WHERE id = p_run;
  RETURN QUERY
    UPDATE steps SET cost_micros = cost_micros + added, reserved_micros = p_estimate, lost_charge_micros = LEAST(p_lost_charge, p_estimate),
                     attempt = steps.attempt + 1, started_at = now()
    WHERE id = s.id
    RETURNING 'ok'::text, steps.attempt;
END $$;

-- Commits a finished attempt if p_token still owns the step: step completed, reservation turned
-- into spending (the cost clamped to it), the step's total charged once, dependents unblocked.
--
-- p_followers (a JSON array, or null): steps the same worker ran after this one inside its
-- reservation (a lease, see p_lease), in order: {node, cost, estimate, output, ms, dependents}.
-- Each must be ready when its turn comes (its predecessors completed just before it); each is
-- completed as its own attempt under p_token, charged min(cost, estimate), and unblocks its
-- dependents. Together they never spend more than this step's reservation (else an exception
-- rolls everything back: the caller's arithmetic is wrong).
--
-- When this was the run's last unfinished step and the caller already knows the run's outputs
-- (p_run_outputs not null: they read only the last step), the run is completed in the same call.
-- When the caller names a dependent it will run next (p_next_node, with its estimate and a new
-- attempt token) and that dependent became ready, its attempt is reserved in the same call, as
-- svc_reserve_step would (a local node: its lost charge is 0): a chain step costs one round trip.
-- With p_lease, and when nothing else of the run is running or ready, the rest of the room is
-- held too (out_next_lease): the caller may run further steps inside it and commit them as
-- followers. out_next_verdict: 'ok' (reserved, out_next_attempt), 'cap_exceeded' or
-- 'insufficient_credit' (nothing held), or null (not ready, or none asked).
CREATE FUNCTION svc_complete_step(p_run uuid, p_node text, p_token text, p_cost bigint, p_output jsonb, p_ms int, p_dependents text[],
                                  p_run_outputs jsonb, p_next_node text, p_next_estimate bigint, p_next_token text,
                                  p_followers jsonb, p_lease boolean)
RETURNS TABLE (out_committed boolean, out_total bigint, out_held bigint, out_ready text[], out_remaining int, out_run_completed boolean,
               out_next_verdict text, out_next_attempt int, out_next_lease bigint, out_follower_totals bigint[])
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  s record;
  f record;
  fs record;
  added bigint;
  spent_added bigint;
  total bigint;
  follower_totals bigint[] := '{}';
  touched text[];
  ready text[];
  remaining int;
  completes_run boolean;
  new_reserved bigint;
  room bigint;
  lease bigint := 0;
  next_verdict text;
  next_attempt int;
BEGIN
  SELECT org_id, status, cap_micros, authorized_micros, reserved_micros, spent_micros INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, 0::bigint, 0::bigint, NULL::text[], -1, false, NULL::text, NULL::int, NULL::bigint, NULL::bigint[];
    RETURN;
  END IF;
  SELECT id, reserved_micros INTO s FROM steps
  WHERE run_id = p_run AND node_id = p_node AND status = 'running' AND attempt_token = p_token FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, 0::bigint, 0::bigint, NULL::text[], -1, false, NULL::text, NULL::int, NULL::bigint, NULL::bigint[];
    RETURN;
  END IF;
  added := LEAST(p_cost, s.reserved_micros);
  spent_added := added;
  UPDATE steps SET status = 'completed', cost_micros = cost_micros + added, reserved_micros = 0, lost_charge_micros = 0, output = p_output, ms = p_ms,
                   error = NULL, finished_at = now()
  WHERE id = s.id
  RETURNING cost_micros INTO total;
  new_reserved := r.reserved_micros - s.reserved_micros;
  UPDATE steps d SET pending_deps = d.pending_deps - 1
  WHERE d.run_id = p_run AND d.node_id = ANY(p_dependents) AND d.pending_deps > 0;
  touched := p_dependents;
  PERFORM svc_charge_step(r.org_id, p_run, s.id, 'step ' || p_node, total);
  -- Followers of a run that stopped meanwhile are dropped (out_follower_totals says how many went in).
  FOR f IN SELECT * FROM jsonb_to_recordset(CASE WHEN r.status = 'running' THEN COALESCE(p_followers, '[]'::jsonb) ELSE '[]'::jsonb END)
                 AS x(node text, cost bigint, estimate bigint, output jsonb, ms int, dependents text[]) LOOP
    spent_added := spent_added + LEAST(f.cost, f.estimate);
    IF spent_added > s.reserved_micros THEN
      RAISE EXCEPTION 'svc_complete_step: the steps run after % in run % cost more than its reservation', p_node, p_run;
    END IF;
    UPDATE steps SET status = 'completed', attempt = attempt + 1, attempt_token = p_token, cost_micros = cost_micros + LEAST(f.cost, f.estimate),
                     reserved_micros = 0, output = f.output, ms = f.ms, error = NULL, started_at = now(), finished_at = now()
    WHERE run_id = p_run AND node_id = f.node AND status IN ('pending', 'queued') AND pending_deps = 0
    RETURNING id, cost_micros INTO fs;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'svc_complete_step: step % of run % was not ready when its turn came', f.node, p_run;
    END IF;
    follower_totals := follower_totals || fs.cost_micros;
    UPDATE steps d SET pending_deps = d.pending_deps - 1
    WHERE d.run_id = p_run AND d.node_id = ANY(f.dependents) AND d.pending_deps > 0;
    touched := touched || f.dependents;
    PERFORM svc_charge_step(r.org_id, p_run, fs.id, 'step ' || f.node, fs.cost_micros);
  END LOOP;
  SELECT array_agg(DISTINCT node_id ORDER BY node_id) INTO ready FROM steps
  WHERE run_id = p_run AND node_id = ANY(touched) AND pending_deps = 0 AND status IN ('pending', 'queued');
  SELECT count(*) INTO remaining FROM steps WHERE run_id = p_run AND status <> 'completed';
  completes_run := remaining = 0 AND p_run_outputs IS NOT NULL AND r.status = 'running';
  IF p_next_node IS NOT NULL AND r.status = 'running' AND p_next_node = ANY(ready) THEN
    -- A ready step holds nothing yet (only running ones do): the check adds its whole estimate.
    room := LEAST(r.cap_micros, COALESCE(r.authorized_micros, r.cap_micros)) - r.spent_micros - spent_added - new_reserved;
    IF p_next_estimate > room THEN
      next_verdict := CASE WHEN p_next_estimate > r.cap_micros - r.spent_micros - spent_added - new_reserved THEN 'cap_exceeded' ELSE 'insufficient_credit' END;
    ELSE
      -- A lease only when nothing else of the run could want the room.
      IF p_lease AND NOT EXISTS (
        SELECT 1 FROM steps o WHERE o.run_id = p_run AND o.node_id <> p_next_node
          AND (o.status = 'running' OR (o.status IN ('pending', 'queued') AND o.pending_deps = 0))) THEN
        lease := room - p_next_estimate;
      END IF;
      new_reserved := new_reserved + p_next_estimate + lease;
      UPDATE steps SET status = 'running', attempt = attempt + 1, attempt_token = p_next_token, reserved_micros = p_next_estimate + lease,
                       lost_charge_micros = 0, started_at = now(), finished_at = NULL
      WHERE run_id = p_run AND node_id = p_next_node
      RETURNING attempt INTO next_attempt;
      next_verdict := 'ok';
    END IF;
  END IF;
  -- One write of the run row: the settlement, the next reservation and, after the last step, the completion.
  IF completes_run THEN
    UPDATE runs SET reserved_micros = new_reserved, spent_micros = spent_micros + spent_added,
                    status = 'completed', outputs = p_run_outputs, finished_at = now()
    WHERE id = p_run;
  ELSE
    UPDATE runs SET reserved_micros = new_reserved, spent_micros = spent_micros + spent_added WHERE id = p_run;
  END IF;
  PERFORM svc_sync_hold(p_run);
  -- A failed or cancelled run's dependents are skipped already: nothing becomes ready there.
  RETURN QUERY SELECT true, total, s.reserved_micros, CASE WHEN r.status = 'running' THEN ready END, remaining, completes_run,
                      next_verdict, next_attempt, CASE WHEN next_verdict = 'ok' THEN lease END, follower_totals;
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
  UPDATE steps SET status = 'failed', cost_micros = cost_micros + added, reserved_micros = 0, lost_charge_micros = 0, error = p_error, ms = p_ms, finished_at = now()
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
  PERFORM svc_sync_hold(p_run);
  RETURN QUERY SELECT true, total, s.reserved_micros, fails_run, skipped;
END $$;

-- Fails a run for a reason of its own (cap or credit exhausted before a step started, a timeout,
-- ...): pending/running → failed with p_error. Whatever the run's status, every unfinished step is
-- stopped: running attempts become `cancelled` (their late commits are no-ops) and are charged
-- their lost charge (their cost is unknown: they may have called out), pending/queued steps
-- `skipped`, or `failed` with p_error for p_culprit (the step that could not start). Every
-- cancelled step's total is charged once. Calling it again on a failed run is harmless, and is how
-- a reaper releases a leftover reservation.
CREATE FUNCTION svc_fail_run(p_run uuid, p_error jsonb, p_culprit text)
RETURNS TABLE (out_found boolean, out_failed boolean, out_released bigint, out_cancelled text[], out_skipped text[])
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  st record;
  released bigint := 0;
  lost_total bigint := 0;
  lost bigint;
  cancelled text[] := '{}';
  skipped text[] := '{}';
  fails_run boolean;
BEGIN
  SELECT org_id, status INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, false, 0::bigint, '{}'::text[], '{}'::text[];
    RETURN;
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
  UPDATE runs SET reserved_micros = reserved_micros - released, spent_micros = spent_micros + lost_total,
                  status = CASE WHEN fails_run THEN 'failed' ELSE status END,
                  error = CASE WHEN fails_run THEN p_error ELSE error END,
                  finished_at = CASE WHEN fails_run THEN now() ELSE finished_at END
  WHERE id = p_run;
  -- Attempts retried or lost before the run stopped spent money: the ledger gets it now (once per step).
  FOR st IN SELECT id, node_id, cost_micros FROM steps WHERE run_id = p_run AND status = 'cancelled' AND cost_micros > 0 LOOP
    PERFORM svc_charge_step(r.org_id, p_run, st.id, 'step ' || st.node_id, st.cost_micros);
  END LOOP;
  PERFORM svc_sync_hold(p_run);
  RETURN QUERY SELECT true, fails_run, released, cancelled, skipped;
END $$;

-- running → completed with its outputs; true for exactly one call per run.
CREATE FUNCTION svc_complete_run(p_run uuid, p_outputs jsonb) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM runs WHERE id = p_run FOR UPDATE;
  UPDATE runs SET status = 'completed', outputs = p_outputs, finished_at = now() WHERE id = p_run AND status = 'running';
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM svc_sync_hold(p_run);
  RETURN true;
END $$;
