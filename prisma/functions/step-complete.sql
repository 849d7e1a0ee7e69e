-- Committing a finished attempt: svc_complete_step. REPEATABLE (see README.md). Caller:
-- services/store/hot-sql.ts for StepRepository.completeStep and its batches (invariants in step-repository.ts).

DROP FUNCTION IF EXISTS svc_complete_step(uuid, text, text, bigint, jsonb, int, text[], jsonb, text, bigint, text);
DROP FUNCTION IF EXISTS svc_complete_step(uuid, text, text, bigint, jsonb, int, text[], jsonb, text, bigint, text, jsonb, boolean);
DROP FUNCTION IF EXISTS svc_complete_step(jsonb);
DROP FUNCTION IF EXISTS svc_complete_steps(jsonb);

-- svc_complete_step(args jsonb) RETURNS jsonb
-- Commits a finished attempt if attempt_token still owns the step: step completed, reservation
-- turned into spending (the cost clamped to it), the step's total charged once, dependents
-- unblocked.
--
-- followers (a JSON array, or null): steps the same worker ran after this one inside its
-- reservation (a lease, see lease, or a group, see svc_reserve_step), in order: {node_id,
-- cost_micros, estimate_micros, output, ms, dependents, skippable}. Each must be ready when its
-- turn comes (its predecessors completed just before it); each is completed as its own attempt
-- under attempt_token, charged min(cost, estimate), and unblocks its dependents. Together they never spend more than this step's reservation (else
-- an exception rolls everything back: the caller's arithmetic is wrong). Followers of a run that
-- stopped meanwhile are dropped (follower_totals says how many went in). A follower marked
-- skippable (a sibling a group job ran: ready before this attempt started, with no job of its
-- own) that another attempt has taken meanwhile (the reaper enqueued it) is skipped: its total
-- is null, it adds nothing, and its dependents are left to that attempt. The followers ready
-- before the commit (a group's siblings) are completed in one statement and their dependents
-- unblocked in one more; the others one by one, in order (a chain's steps), as if all were: one
-- that only a later follower makes ready is not ready at its turn.
--
-- When this was the run's last unfinished step and the caller already knows the run's outputs
-- (run_outputs not null: they read only the last step), the run is completed in the same call.
-- When the caller names a dependent it will run next (next_node_id, with next_estimate_micros
-- and next_attempt_token) and that dependent became ready, its attempt is reserved in the same
-- call, as svc_reserve_step would (a local node: its lost charge is 0): a chain step costs one
-- round trip. With lease, and when nothing else of the run is running or ready, the rest of the
-- room is held too (next_lease_micros): the caller may run further steps inside it and commit
-- them as followers.
--
-- settle_later (optional, false by default): when the run settles, its organization's row is not
-- written; the answer's settlement says what to add to it (svc_store_run with p_apply false), for
-- svc_complete_steps, which writes it once for several commits.
--
-- Input:  run_id uuid, node_id text, attempt_token text, cost_micros, output (JSON object), ms int,
--         dependents (text array), run_outputs (object or null), next_node_id (text or null),
--         next_estimate_micros, next_attempt_token, followers (array or null), lease boolean,
--         settle_later boolean (optional).
-- Output: committed boolean, total_micros (the step's cost over all its attempts: what the ledger
--         was charged), held_micros (what the attempt held), ready (text array or null),
--         remaining int (steps not completed; -1 when not committed), run_completed boolean,
--         next_verdict ('ok' | 'cap_exceeded' | 'insufficient_credit' | null: not ready or none
--         asked), next_attempt int, next_lease_micros, follower_totals (array of micro-USD, null
--         for a skipped follower), settlement (with settle_later: {org_id, balance_micros,
--         held_micros} to add to the organization's row, or null).
-- Locks:  the run row, then the step row (FOR UPDATE), then its dependents, followers and the
--         next step (UPDATE), then the organization row when the run settles (svc_store_run).
CREATE FUNCTION svc_complete_step(args jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  p_run uuid := svc_arg(args, 'run_id')::uuid;
  p_node text := svc_arg(args, 'node_id');
  p_token text := svc_arg(args, 'attempt_token');
  p_cost bigint := svc_arg(args, 'cost_micros')::bigint;
  p_output jsonb := args->'output';
  p_ms int := svc_arg(args, 'ms')::int;
  p_dependents text[] := ARRAY(SELECT jsonb_array_elements_text(COALESCE(args->'dependents', '[]'::jsonb)));
  p_run_outputs jsonb := NULLIF(args->'run_outputs', 'null'::jsonb);
  p_next_node text := args->>'next_node_id';
  p_next_estimate bigint := (args->>'next_estimate_micros')::bigint;
  p_next_token text := args->>'next_attempt_token';
  p_followers jsonb := NULLIF(args->'followers', 'null'::jsonb);
  p_lease boolean := COALESCE((args->>'lease')::boolean, false);
  p_settle_later boolean := COALESCE((args->>'settle_later')::boolean, false);
  settlement jsonb;
  r runs%ROWTYPE;
  nr runs%ROWTYPE;
  s record;
  f record;
  done steps%ROWTYPE;
  added bigint;
  charged bigint;
  spent_added bigint;
  total bigint;
  follower_totals bigint[] := '{}';
  touched text[];
  charged_ids uuid[];
  first_totals jsonb;
  first_added bigint;
  first_ids uuid[];
  first_dependents text[];
  first_last_ord bigint;
  ready text[];
  remaining int;
  completes_run boolean;
  new_reserved bigint;
  room bigint;
  lease bigint := 0;
  next_verdict text;
  next_attempt int;
BEGIN
  SELECT * INTO r FROM runs WHERE id = p_run FOR UPDATE;
  IF FOUND THEN
    SELECT id, reserved_micros INTO s FROM steps
    WHERE run_id = p_run AND node_id = p_node AND status = 'running' AND attempt_token = p_token FOR UPDATE;
  END IF;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('committed', false, 'total_micros', 0, 'held_micros', 0, 'ready', NULL, 'remaining', -1, 'run_completed', false,
                              'next_verdict', NULL, 'next_attempt', NULL, 'next_lease_micros', NULL, 'follower_totals', NULL);
  END IF;
  added := LEAST(p_cost, s.reserved_micros);
  spent_added := added;
  UPDATE steps SET status = 'completed', cost_micros = cost_micros + added, reserved_micros = 0, lost_charge_micros = 0, output = p_output, ms = p_ms,
                   error = NULL, finished_at = now()
  WHERE id = s.id
  RETURNING * INTO done;
  total := done.cost_micros;
  new_reserved := r.reserved_micros - s.reserved_micros;
  -- A run's last step has no dependents: no statement for nothing
  -- (docs/performance/postgres.md, Instructions per run).
  IF cardinality(p_dependents) > 0 THEN
    UPDATE steps d SET pending_deps = d.pending_deps - 1
    WHERE d.run_id = p_run AND d.node_id = ANY(p_dependents) AND d.pending_deps > 0;
  END IF;
  touched := p_dependents;
  charged_ids := ARRAY[done.id];
  IF r.status = 'running' AND p_followers IS NOT NULL THEN
    -- The followers ready already (a group's siblings, a chain's first) are completed in one
    -- statement, and their dependents unblocked in one more; the rest, in order, one by one below
    -- (each made ready by those before it). A follower ready already needs none of the others.
    WITH fl AS (
      SELECT x.*, o.ord FROM jsonb_array_elements(p_followers) WITH ORDINALITY AS o(value, ord),
        jsonb_to_record(o.value) AS x(node_id text, cost_micros bigint, estimate_micros bigint, output jsonb, ms int, dependents text[])
    ), done_now AS (
      UPDATE steps st SET status = 'completed', attempt = st.attempt + 1, attempt_token = p_token, cost_micros = st.cost_micros + LEAST(fl.cost_micros, fl.estimate_micros),
                          reserved_micros = 0, output = fl.output, ms = fl.ms, error = NULL, started_at = now(), finished_at = now()
      FROM fl WHERE st.run_id = p_run AND st.node_id = fl.node_id AND st.status IN ('pending', 'queued') AND st.pending_deps = 0
      RETURNING fl.ord AS d_ord, st.id AS d_id, st.cost_micros AS d_total, LEAST(fl.cost_micros, fl.estimate_micros) AS d_added, fl.dependents AS d_dependents
    ), unblocked AS (
      UPDATE steps d SET pending_deps = GREATEST(d.pending_deps - c.n, 0)
      FROM (SELECT dep, count(*)::int AS n FROM done_now, unnest(done_now.d_dependents) AS dep GROUP BY dep) c
      WHERE d.run_id = p_run AND d.node_id = c.dep AND d.pending_deps > 0
    )
    SELECT COALESCE(jsonb_object_agg(d_ord::text, d_total), '{}'::jsonb), COALESCE(sum(d_added), 0), COALESCE(array_agg(d_id), '{}'), COALESCE(max(d_ord), 0),
           COALESCE((SELECT array_agg(dep) FROM done_now, unnest(done_now.d_dependents) AS dep), '{}')
    INTO first_totals, first_added, first_ids, first_last_ord, first_dependents FROM done_now;
    spent_added := spent_added + first_added;
    IF spent_added > s.reserved_micros THEN
      RAISE EXCEPTION 'svc_complete_step: the steps run after % in run % cost more than its reservation', p_node, p_run;
    END IF;
    touched := touched || first_dependents;
    charged_ids := charged_ids || first_ids;
    FOR f IN SELECT x.*, o.ord FROM jsonb_array_elements(p_followers) WITH ORDINALITY AS o(value, ord),
                    jsonb_to_record(o.value) AS x(node_id text, cost_micros bigint, estimate_micros bigint, output jsonb, ms int, dependents text[], skippable boolean) LOOP
      IF first_totals ? f.ord::text THEN
        follower_totals := follower_totals || (first_totals->>f.ord::text)::bigint;
        CONTINUE;
      END IF;
      IF spent_added + LEAST(f.cost_micros, f.estimate_micros) > s.reserved_micros THEN
        RAISE EXCEPTION 'svc_complete_step: the steps run after % in run % cost more than its reservation', p_node, p_run;
      END IF;
      -- Made ready by a follower after it, which came first above: not ready when its turn came.
      IF f.ord < first_last_ord AND EXISTS (
        SELECT 1 FROM jsonb_array_elements(p_followers) WITH ORDINALITY AS o(value, ord)
        WHERE o.ord > f.ord AND first_totals ? o.ord::text AND o.value->'dependents' ? f.node_id) THEN
        RAISE EXCEPTION 'svc_complete_step: step % of run % was not ready when its turn came', f.node_id, p_run;
      END IF;
      UPDATE steps SET status = 'completed', attempt = attempt + 1, attempt_token = p_token, cost_micros = cost_micros + LEAST(f.cost_micros, f.estimate_micros),
                       reserved_micros = 0, output = f.output, ms = f.ms, error = NULL, started_at = now(), finished_at = now()
      WHERE run_id = p_run AND node_id = f.node_id AND status IN ('pending', 'queued') AND pending_deps = 0
      RETURNING * INTO done;
      IF NOT FOUND AND COALESCE(f.skippable, false) THEN
        follower_totals := follower_totals || NULL::bigint;
        CONTINUE;
      END IF;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'svc_complete_step: step % of run % was not ready when its turn came', f.node_id, p_run;
      END IF;
      spent_added := spent_added + LEAST(f.cost_micros, f.estimate_micros);
      follower_totals := follower_totals || done.cost_micros;
      UPDATE steps d SET pending_deps = d.pending_deps - 1
      WHERE d.run_id = p_run AND d.node_id = ANY(f.dependents) AND d.pending_deps > 0;
      touched := touched || f.dependents;
      charged_ids := charged_ids || done.id;
    END LOOP;
  END IF;
  -- Every step of the commit charged at once, in one ledger insert; the run's row takes the charge with the rest below.
  charged := svc_charge_ledger(p_run, r.org_id, charged_ids);
  -- The next step may be no dependent of these (a group's sibling, reserved on its own after a failure).
  IF p_next_node IS NOT NULL THEN
    touched := touched || p_next_node;
  END IF;
  IF cardinality(touched) > 0 THEN
    SELECT array_agg(DISTINCT node_id ORDER BY node_id) INTO ready FROM steps
    WHERE run_id = p_run AND node_id = ANY(touched) AND pending_deps = 0 AND status IN ('pending', 'queued');
  END IF;
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
  -- One write of the run row (svc_store_run): the charge, the settlement, the next reservation and,
  -- after the last step, the completion; with the organization's row when the run settles.
  nr := r;
  nr.reserved_micros := new_reserved;
  nr.spent_micros := r.spent_micros + spent_added;
  nr.charged_micros := r.charged_micros + charged;
  IF completes_run THEN
    nr.status := 'completed';
    nr.outputs := p_run_outputs;
    nr.finished_at := now();
  END IF;
  settlement := svc_store_run(r, nr, NOT p_settle_later);
  -- A failed or cancelled run's dependents are skipped already: nothing becomes ready there.
  RETURN jsonb_build_object('committed', true, 'total_micros', total, 'held_micros', s.reserved_micros,
                            'ready', CASE WHEN r.status = 'running' THEN to_jsonb(ready) END, 'remaining', remaining, 'run_completed', completes_run,
                            'next_verdict', next_verdict, 'next_attempt', next_attempt,
                            'next_lease_micros', CASE WHEN next_verdict = 'ok' THEN lease END, 'follower_totals', to_jsonb(follower_totals),
                            'settlement', settlement);
END $$;

-- svc_complete_steps(args jsonb) RETURNS jsonb
-- Commits several finished attempts in one transaction, each as svc_complete_step would alone,
-- and writes each organization's row once for all the runs they settle (settle_later), where
-- each commit alone queued for the row and handed its lock on: StepRepository sends the commits
-- that may finish a run (run_outputs given) of one organization that queue in its process
-- together (bench B8 on 16 cores: these commits waiting on the organization row's tuple lock were
-- most of the sampled connections).
--
-- The commits are made in the order of their runs' ids, so that two calls lock shared run rows in
-- the same order; every run row before any organization row (as svc_complete_step alone), and
-- the organization rows in the order of their ids.
-- One commit alone is made as svc_complete_step makes it (settling its organization itself).
-- Input:  commits: [svc_complete_step's input, ...] (settle_later is set on each of several).
-- Output: results: [svc_complete_step's output, ...] in the order of commits.
-- Locks:  each commit's (svc_complete_step), then the organization row of each run that settles,
--         released before the commit's flush (svc_release_locks_before_flush: the caller waits
--         for it).
CREATE FUNCTION svc_complete_steps(args jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  c record;
  out jsonb;
  outs jsonb[] := '{}';
  settled jsonb[] := '{}';
  d record;
  p_commits jsonb := svc_arg(args, 'commits')::jsonb;
BEGIN
  -- One commit (what a run alone sends) settles its organization itself: no statements to order
  -- commits or to sum settlements (docs/performance/postgres.md, Instructions per run).
  IF jsonb_array_length(p_commits) = 1 THEN
    RETURN jsonb_build_object('results', jsonb_build_array(svc_complete_step(p_commits->0) - 'settlement'));
  END IF;
  FOR c IN SELECT value, ord FROM jsonb_array_elements(p_commits) WITH ORDINALITY AS x(value, ord)
           ORDER BY value->>'run_id', ord LOOP
    out := svc_complete_step(c.value || '{"settle_later": true}'::jsonb);
    outs[c.ord] := out - 'settlement';
    IF out->'settlement' <> 'null'::jsonb THEN
      settled := settled || (out->'settlement');
    END IF;
  END LOOP;
  FOR d IN SELECT (x->>'org_id')::uuid AS org_id, sum((x->>'balance_micros')::bigint)::bigint AS balance_added,
                  sum((x->>'held_micros')::bigint)::bigint AS held_added
           FROM unnest(settled) AS x GROUP BY 1 ORDER BY 1 LOOP
    PERFORM svc_settle_org(d.org_id, d.balance_added, d.held_added);
  END LOOP;
  RETURN jsonb_build_object('results', to_jsonb(outs));
END $$;
