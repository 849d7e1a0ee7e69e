-- Storing runs with their steps and their holds on the organization's balance: svc_create_runs.
-- REPEATABLE (see README.md). Caller: services/store/hot-sql.ts for RunRepository.createRun.

DROP FUNCTION IF EXISTS svc_create_run(jsonb);
DROP FUNCTION IF EXISTS svc_create_runs(jsonb);
DROP FUNCTION IF EXISTS svc_create_held_runs(uuid, jsonb);

-- svc_create_runs(args jsonb) RETURNS jsonb
-- Stores runs of one organization, in order, each with one step row per executable node, hence
-- atomically: a run is never visible without its steps. With require_credit a run holds up to its
-- cap of what its organization has available (balance less what its other unfinished runs hold,
-- those stored before it in this call included; docs/money.md, Holds), and is refused (id null)
-- when that is nothing or less than the reservations it is stored with; a refusal leaves the
-- others of the call alone. Several at once (RunRepository batches the creations of an
-- organization that queue in its process): the organization's row is locked and written once for
-- all of them, where each creation alone queued for the row and handed its lock on (bench B8).
--
-- Why a function and not one statement: the organization row is locked first, and the holds are
-- written by a later statement, whose snapshot sees the version this transaction locked. The one
-- statement this replaces locked the row in one CTE and updated it in another from the
-- statement's older snapshot: after waiting for another transaction's change, it chased the
-- row's update chain a second time, holding the new version while queueing for the old one's
-- tuple lock, and under load Postgres found it in a deadlock with other creations ("deadlock
-- detected ... while locking updated version of tuple in relation organizations", answered as a
-- 500; bench B8, 2026-11-25 and 2026-11-27).
--
-- Input:  org_id, runs: [{user_id, token_id (or null), workflow_id (or null), workflow_version_id
--         (or null), definition, inputs, cap_micros, status ('pending' | 'running'),
--         require_credit boolean, reserved_micros (the steps' reservations in all), run_id (or
--         null: one is made), max_duration_seconds (or null: deadline_at is that long after now;
--         docs/runs.md, Cancellation), output_cache (or null: auto; docs/runs.md, Output caching),
--         node_entries (or null: the catalog file entries it started with, by node id), idempotency_key (or null) and request_hash (with a key),
--         webhook (or null: {url, events (text array)}, stored in run_webhooks; docs/webhooks.md),
--         batch_id (or null: the batch whose row the run runs; docs/batches.md),
--         schedule_id (or null: the schedule whose tick starts the run; docs/schedules.md),
--         steps: [{node_id, pending_deps, token (null, or the attempt token of
--         a step reserved with the run: stored running, not started), reserved_micros}]}].
-- Output: results: one per run, in order: {id (null when refused or the organization does not
--         exist), available_micros (what was available to it; null when the organization does
--         not exist), existing (true: not stored, the run of its unexpired idempotency key is
--         answered instead), same_request (with existing: whether that key was stored with this
--         request_hash)}.
-- Idempotency keys (docs/runs.md, Idempotent run creation): a run with a key whose row is younger
-- than 24 hours is not stored; its result names that row's run. Otherwise the run is stored (or
-- refused, storing nothing) and the key's row written, replacing an expired one. The organization's
-- row lock orders every creation of its runs, so of two requests with one key exactly one stores
-- a run, and two runs of one call with one key give the second the first's run.
-- Locks:  the organization row (FOR NO KEY UPDATE: what the UPDATE of its hold takes, so it waits
--         for no foreign-key check of a row that names the organization), released before the
--         commit's flush (svc_release_locks_before_flush: the caller waits for it). It is held
--         while the runs are inserted: their foreign-key checks find the organization's row
--         locked by this transaction already, and those of its users' and tokens' rows run one
--         creation at a time, so none makes a multixact (a row key-shared by several
--         transactions at once).
CREATE FUNCTION svc_create_runs(args jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  p_org uuid := svc_arg(args, 'org_id')::uuid;
  p_runs jsonb := svc_arg(args, 'runs')::jsonb;
  a jsonb;
  i int;
  p_cap bigint;
  p_status text;
  p_require boolean;
  p_reserved bigint;
  available bigint;
  amount bigint;
  held bigint := 0;
  new_id uuid;
  p_key text;
  kept record;
  results jsonb := '[]'::jsonb;
BEGIN
  SELECT balance_micros - held_micros INTO available FROM organizations WHERE id = p_org FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('results', (SELECT COALESCE(jsonb_agg(jsonb_build_object('id', NULL, 'available_micros', NULL)), '[]'::jsonb)
                                          FROM jsonb_array_elements(p_runs)));
  END IF;
  -- Every creation of the organization's runs waits for this lock: release it before the flush (money-holds.sql).
  PERFORM svc_release_locks_before_flush();
  -- By index, not over jsonb_array_elements: a loop of expressions, not a query's cursor.
  FOR i IN 0 .. jsonb_array_length(p_runs) - 1 LOOP
    a := p_runs->i;
    p_cap := svc_arg(a, 'cap_micros')::bigint;
    p_status := svc_arg(a, 'status');
    p_require := svc_arg(a, 'require_credit')::boolean;
    p_reserved := svc_arg(a, 'reserved_micros')::bigint;
    p_key := a->>'idempotency_key';
    IF p_key IS NOT NULL THEN
      SELECT run_id, request_hash INTO kept FROM idempotency_keys
      WHERE org_id = p_org AND key = p_key AND created_at > now() - interval '24 hours';
      IF FOUND THEN
        results := results || jsonb_build_array(jsonb_build_object('id', kept.run_id, 'available_micros', available, 'existing', true,
                                                                   'same_request', kept.request_hash = svc_arg(a, 'request_hash')));
        CONTINUE;
      END IF;
    END IF;
    -- Without require_credit (internal callers) the run holds nothing and is capped by its cap alone.
    IF p_require AND NOT (available > 0 AND LEAST(p_cap, available) >= p_reserved) THEN
      results := results || jsonb_build_array(jsonb_build_object('id', NULL, 'available_micros', available));
      CONTINUE;
    END IF;
    amount := CASE WHEN p_require THEN LEAST(p_cap, available) ELSE 0 END;
    INSERT INTO runs (id, org_id, user_id, token_id, workflow_id, workflow_version_id, definition, inputs, cap_micros, status, started_at, reserved_micros,
                      authorized_micros, held_micros, deadline_at, output_cache, node_entries, batch_id, schedule_id)
    VALUES (COALESCE((a->>'run_id')::uuid, gen_random_uuid()), p_org, svc_arg(a, 'user_id')::uuid, (a->>'token_id')::uuid,
            (a->>'workflow_id')::uuid, (a->>'workflow_version_id')::uuid, a->'definition', a->'inputs', p_cap, p_status,
            CASE WHEN p_status = 'running' THEN now() END, p_reserved, CASE WHEN p_require THEN amount END, amount,
            now() + make_interval(secs => (a->>'max_duration_seconds')::int), a->>'output_cache', NULLIF(a->'node_entries', 'null'::jsonb),
            (a->>'batch_id')::uuid, (a->>'schedule_id')::uuid)
    RETURNING id INTO new_id;
    -- A reserved step is running under its token but not started by a worker yet (started_at null: see RunRecoveryRepository.listRunnable).
    INSERT INTO steps (run_id, node_id, pending_deps, status, attempt, attempt_token, reserved_micros)
    SELECT new_id, n.node_id, n.pending_deps, CASE WHEN n.token IS NULL THEN 'pending' ELSE 'running' END, CASE WHEN n.token IS NULL THEN 0 ELSE 1 END,
           n.token, n.reserved_micros
    FROM jsonb_to_recordset(svc_arg(a, 'steps')::jsonb) AS n(node_id text, pending_deps int, token text, reserved_micros bigint);
    IF a->'webhook' IS NOT NULL AND jsonb_typeof(a->'webhook') = 'object' THEN
      INSERT INTO run_webhooks (run_id, url, events)
      VALUES (new_id, a->'webhook'->>'url', ARRAY(SELECT jsonb_array_elements_text(a->'webhook'->'events')));
    END IF;
    IF p_key IS NOT NULL THEN
      INSERT INTO idempotency_keys (org_id, key, request_hash, run_id) VALUES (p_org, p_key, svc_arg(a, 'request_hash'), new_id)
      ON CONFLICT (org_id, key) DO UPDATE SET request_hash = EXCLUDED.request_hash, run_id = EXCLUDED.run_id, created_at = now();
    END IF;
    results := results || jsonb_build_array(jsonb_build_object('id', new_id, 'available_micros', available));
    available := available - amount;
    held := held + amount;
  END LOOP;
  IF held <> 0 THEN
    UPDATE organizations SET held_micros = held_micros + held WHERE id = p_org;
  END IF;
  RETURN jsonb_build_object('results', results);
END $$;

-- svc_create_held_runs(p_org uuid, p_runs jsonb) RETURNS jsonb
-- svc_create_runs for runs that each hold their whole cap (require_credit, no idempotency key, no
-- webhook: a batch turn's rows, svc_feed_batch), with the organization's row locked LAST: the runs
-- and their steps are inserted first, in two statements, then one UPDATE holds all their caps when
-- the organization's available balance (as that UPDATE finds it) covers them. svc_create_runs locks
-- the row first and holds it while it inserts run by run: a turn of 200 rows held it for tens of
-- milliseconds, and every commit settling a run of the organization queued behind it (bench B14).
-- When the balance does not cover every cap (read first without a lock, then by the UPDATE), or a
-- run's reservations exceed its cap, nothing is kept of this path and svc_create_runs stores them,
-- run by run (each holding what is left, some refused).
-- Input:  p_org; p_runs as svc_create_runs' runs (their idempotency_key and webhook ignored: absent).
-- Output: as svc_create_runs.
-- Locks:  the organization row (FOR NO KEY UPDATE by the UPDATE), last, released before the
--         commit's flush; the users', tokens', workflows' and batch's rows FOR KEY SHARE by the
--         inserts' foreign-key checks (the organization's too, before its lock).
CREATE FUNCTION svc_create_held_runs(p_org uuid, p_runs jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  ids uuid[];
  total bigint;
  -- A run this path cannot store: its reservations exceed its cap, or it need not hold credit.
  run_by_run boolean;
  available bigint;
BEGIN
  SELECT array_agg(COALESCE((r.a->>'run_id')::uuid, gen_random_uuid()) ORDER BY r.ord), sum(svc_arg(r.a, 'cap_micros')::bigint),
         bool_or(svc_arg(r.a, 'reserved_micros')::bigint > svc_arg(r.a, 'cap_micros')::bigint OR NOT svc_arg(r.a, 'require_credit')::boolean)
  INTO ids, total, run_by_run
  FROM jsonb_array_elements(p_runs) WITH ORDINALITY AS r(a, ord);
  SELECT balance_micros - held_micros INTO available FROM organizations WHERE id = p_org;
  IF ids IS NULL OR available IS NULL OR available < total OR run_by_run THEN
    RETURN svc_create_runs(jsonb_build_object('org_id', p_org, 'runs', p_runs));
  END IF;
  INSERT INTO runs (id, org_id, user_id, token_id, workflow_id, workflow_version_id, definition, inputs, cap_micros, status, started_at, reserved_micros,
                    authorized_micros, held_micros, deadline_at, output_cache, node_entries, batch_id, schedule_id)
  SELECT ids[r.ord], p_org, svc_arg(r.a, 'user_id')::uuid, (r.a->>'token_id')::uuid, (r.a->>'workflow_id')::uuid, (r.a->>'workflow_version_id')::uuid,
         r.a->'definition', r.a->'inputs', svc_arg(r.a, 'cap_micros')::bigint, svc_arg(r.a, 'status'),
         CASE WHEN r.a->>'status' = 'running' THEN now() END, svc_arg(r.a, 'reserved_micros')::bigint,
         (r.a->>'cap_micros')::bigint, (r.a->>'cap_micros')::bigint,
         now() + make_interval(secs => (r.a->>'max_duration_seconds')::int), r.a->>'output_cache', NULLIF(r.a->'node_entries', 'null'::jsonb),
         (r.a->>'batch_id')::uuid, (r.a->>'schedule_id')::uuid
  FROM jsonb_array_elements(p_runs) WITH ORDINALITY AS r(a, ord);
  INSERT INTO steps (run_id, node_id, pending_deps, status, attempt, attempt_token, reserved_micros)
  SELECT ids[r.ord], n.node_id, n.pending_deps, CASE WHEN n.token IS NULL THEN 'pending' ELSE 'running' END, CASE WHEN n.token IS NULL THEN 0 ELSE 1 END,
         n.token, n.reserved_micros
  FROM jsonb_array_elements(p_runs) WITH ORDINALITY AS r(a, ord)
  CROSS JOIN LATERAL jsonb_to_recordset(svc_arg(r.a, 'steps')::jsonb) AS n(node_id text, pending_deps int, token text, reserved_micros bigint);
  -- Every creation and settlement of the organization's runs waits for this lock: release it before the flush (money-holds.sql).
  PERFORM svc_release_locks_before_flush();
  UPDATE organizations SET held_micros = held_micros + total WHERE id = p_org AND balance_micros - held_micros >= total
  RETURNING balance_micros - held_micros + total INTO available;
  IF NOT FOUND THEN
    -- The balance fell meanwhile: these runs were never visible; store them the exact way.
    DELETE FROM runs WHERE id = ANY(ids);
    RETURN svc_create_runs(jsonb_build_object('org_id', p_org, 'runs', p_runs));
  END IF;
  RETURN jsonb_build_object('results', (
    SELECT jsonb_agg(jsonb_build_object('id', ids[c.ord], 'available_micros', available - c.before) ORDER BY c.ord)
    FROM (SELECT r.ord, COALESCE(sum((r.a->>'cap_micros')::bigint) OVER (ORDER BY r.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
          FROM jsonb_array_elements(p_runs) WITH ORDINALITY AS r(a, ord)) c));
END $$;
