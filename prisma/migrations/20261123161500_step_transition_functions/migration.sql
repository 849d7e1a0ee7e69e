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
-- svc_reserve_step would: a chain step costs one round trip. With p_lease, and when nothing else
-- of the run is running or ready, the rest of the cap's room is held too (out_next_lease): the
-- caller may run further steps inside it and commit them as followers. out_next_verdict: 'ok'
-- (reserved, out_next_attempt), 'cap_exceeded' (nothing held), or null (not ready, or none asked).
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
  SELECT org_id, status, cap_micros, reserved_micros, spent_micros INTO r FROM runs WHERE id = p_run FOR UPDATE;
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
  UPDATE steps SET status = 'completed', cost_micros = cost_micros + added, reserved_micros = 0, output = p_output, ms = p_ms,
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
    -- A ready step holds nothing yet (only running ones do): the cap check adds its whole estimate.
    room := r.cap_micros - r.spent_micros - spent_added - new_reserved;
    IF p_next_estimate > room THEN
      next_verdict := 'cap_exceeded';
    ELSE
      -- A lease only when nothing else of the run could want the room.
      IF p_lease AND NOT EXISTS (
        SELECT 1 FROM steps o WHERE o.run_id = p_run AND o.node_id <> p_next_node
          AND (o.status = 'running' OR (o.status IN ('pending', 'queued') AND o.pending_deps = 0))) THEN
        lease := room - p_next_estimate;
      END IF;
      new_reserved := new_reserved + p_next_estimate + lease;
      UPDATE steps SET status = 'running', attempt = attempt + 1, attempt_token = p_next_token, reserved_micros = p_next_estimate + lease,
                       started_at = now(), finished_at = NULL
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
