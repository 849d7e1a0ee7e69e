-- Storing a run with its steps and its hold on the organization's balance: svc_create_run.
-- REPEATABLE (see README.md). Caller: services/store/hot-sql.ts for RunRepository.createRun.

DROP FUNCTION IF EXISTS svc_create_run(jsonb);

-- svc_create_run(args jsonb) RETURNS jsonb
-- Stores a run and one step row per executable node, hence atomically: a run is never visible
-- without its steps. With require_credit the run holds up to its cap of what its organization has
-- available (balance less what its other unfinished runs hold; docs/money.md, Holds), and is
-- refused (id null) when that is nothing or less than the reservations it is stored with.
--
-- Why a function and not one statement: the organization row is locked first, and the hold is
-- written by a later statement, whose snapshot sees the version this transaction locked. The one
-- statement this replaces locked the row in one CTE and updated it in another from the
-- statement's older snapshot: after waiting for another transaction's change, it chased the
-- row's update chain a second time, holding the new version while queueing for the old one's
-- tuple lock, and under load Postgres found it in a deadlock with other creations ("deadlock
-- detected ... while locking updated version of tuple in relation organizations", answered as a
-- 500; bench B8, 2026-11-25 and 2026-11-27).
--
-- Input:  org_id, user_id, token_id (or null), workflow_id (or null), workflow_version_id (or
--         null), definition, inputs, cap_micros, status ('pending' | 'running'), require_credit
--         boolean, reserved_micros (the steps' reservations in all), run_id (or null: one is
--         made), steps: [{node_id, pending_deps, token (null, or the attempt token of a step
--         reserved with the run: stored running, not started), reserved_micros}].
-- Output: id (null when refused or the organization does not exist), available_micros (null
--         when the organization does not exist).
-- Locks:  the organization row (FOR NO KEY UPDATE: what the UPDATE of its hold takes, so it waits
--         for no foreign-key check of a row that names the organization), released before the
--         commit's flush (svc_release_locks_before_flush: the caller waits for it).
CREATE FUNCTION svc_create_run(args jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  p_org uuid := svc_arg(args, 'org_id')::uuid;
  p_cap bigint := svc_arg(args, 'cap_micros')::bigint;
  p_status text := svc_arg(args, 'status');
  p_require boolean := svc_arg(args, 'require_credit')::boolean;
  p_reserved bigint := svc_arg(args, 'reserved_micros')::bigint;
  available bigint;
  amount bigint;
  new_id uuid;
BEGIN
  SELECT balance_micros - held_micros INTO available FROM organizations WHERE id = p_org FOR NO KEY UPDATE;
  -- Every creation of the organization's runs waits for this lock: release it before the flush (money-holds.sql).
  PERFORM svc_release_locks_before_flush();
  IF NOT FOUND THEN
    RETURN jsonb_build_object('id', NULL, 'available_micros', NULL);
  END IF;
  -- Without require_credit (internal callers) the run holds nothing and is capped by its cap alone.
  IF p_require AND NOT (available > 0 AND LEAST(p_cap, available) >= p_reserved) THEN
    RETURN jsonb_build_object('id', NULL, 'available_micros', available);
  END IF;
  amount := CASE WHEN p_require THEN LEAST(p_cap, available) ELSE 0 END;
  IF amount <> 0 THEN
    UPDATE organizations SET held_micros = held_micros + amount WHERE id = p_org;
  END IF;
  INSERT INTO runs (id, org_id, user_id, token_id, workflow_id, workflow_version_id, definition, inputs, cap_micros, status, started_at, reserved_micros,
                    authorized_micros, held_micros)
  VALUES (COALESCE((args->>'run_id')::uuid, gen_random_uuid()), p_org, svc_arg(args, 'user_id')::uuid, (args->>'token_id')::uuid,
          (args->>'workflow_id')::uuid, (args->>'workflow_version_id')::uuid, args->'definition', args->'inputs', p_cap, p_status,
          CASE WHEN p_status = 'running' THEN now() END, p_reserved, CASE WHEN p_require THEN amount END, amount)
  RETURNING id INTO new_id;
  -- A reserved step is running under its token but not started by a worker yet (started_at null: see RunRecoveryRepository.listRunnable).
  INSERT INTO steps (run_id, node_id, pending_deps, status, attempt, attempt_token, reserved_micros)
  SELECT new_id, n.node_id, n.pending_deps, CASE WHEN n.token IS NULL THEN 'pending' ELSE 'running' END, CASE WHEN n.token IS NULL THEN 0 ELSE 1 END,
         n.token, n.reserved_micros
  FROM jsonb_to_recordset(svc_arg(args, 'steps')::jsonb) AS n(node_id text, pending_deps int, token text, reserved_micros bigint);
  RETURN jsonb_build_object('id', new_id, 'available_micros', available);
END $$;
