-- Feeding a batch's rows to runs and settling them against the batch's spend cap: svc_feed_batch.
-- REPEATABLE (see README.md). Caller: services/store/hot-sql.ts for BatchRepository.feed.

DROP FUNCTION IF EXISTS svc_feed_batch(jsonb);
DROP FUNCTION IF EXISTS svc_end_pending_rows(uuid, int, text, jsonb);

-- svc_end_pending_rows(p_batch uuid, p_after_seq int, p_status text, p_error jsonb) RETURNS int
-- Ends every pending row of batch p_batch with p_status and p_error, never started, numbered after
-- p_after_seq in row order (their places among the batch's ended rows); answers how many.
-- Locks: those rows (the caller holds the batch row).
CREATE FUNCTION svc_end_pending_rows(p_batch uuid, p_after_seq int, p_status text, p_error jsonb) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  n int;
BEGIN
  WITH gone AS (
    UPDATE batch_rows br SET status = p_status, ended_seq = p_after_seq + p.n, finished_at = now(), error = p_error
    FROM (SELECT row, row_number() OVER (ORDER BY row) AS n FROM batch_rows WHERE batch_id = p_batch AND status = 'pending') p
    WHERE br.batch_id = p_batch AND br.row = p.row
    RETURNING 1)
  SELECT count(*) INTO n FROM gone;
  RETURN n;
END $$;

-- svc_feed_batch(args jsonb) RETURNS jsonb
-- One turn of a batch (docs/batches.md, How rows run), in one transaction:
--   1. settles its rows whose run has ended and can be charged nothing more (the run reserves
--      nothing and its ledger has every charge): the row takes the run's status, outputs, error and
--      charge; the batch's spent grows by that charge and its held falls by the row's cap;
--   2. past its deadline, a running batch becomes cancelling (stop_reason says why);
--   3. a cancelling batch cancels its rows not started (they never start) and answers the runs of
--      its rows in flight, for the caller to cancel as runs are cancelled;
--   4. a running batch starts pending rows in row order while it has room (concurrency less rows
--      in flight, at most max_start): each row's run is capped at the least of the batch's row
--      cap and what the batch's cap leaves (cap - spent - held), and stored through
--      svc_create_runs, which holds that cap of the organization's balance (a lone local first
--      step, template->'first_step', reserved with the run at the row's first_estimate_micros when
--      that fits the cap: its attempt token is answered with the row). So spent + held never
--      passes the batch's cap, and since a run's cost never passes its cap, neither does the
--      batch's. When the batch's cap leaves nothing, or the organization's balance refuses a run,
--      with no row in flight, the rows left fail (spend_cap_exceeded, insufficient_credit). A row
--      started with less than the row cap (what the batch's cap left) that stops at its cap
--      means the cap has no room for a row's worst case: no row starts after it, and the rows
--      left fail spend_cap_exceeded once those in flight have ended (stop_reason says so);
--   5. a batch with no row pending or in flight ends: completed, or cancelled when cancelling.
-- Input:  batch_id uuid, max_start int (the most rows this turn starts).
-- Output: {busy: true} when another transaction holds the batch (another feeder's turn); {found:
--         false} when there is no such batch; else {org_id, status (after the turn), ended
--         (this turn ended the batch), settled (rows settled this turn, failed without a run
--         included), started: [{row, run_id, inputs, token (the attempt token of a first step
--         reserved with the run, or null)}], cancel_runs (run ids of rows in flight of a cancelling
--         batch), pending, running}.
-- Locks:  the batch row (FOR NO KEY UPDATE SKIP LOCKED: a busy batch is skipped, never waited
--         for; a run's batch_id foreign-key check takes KEY SHARE, which it does not block), its
--         rows, then the organization row (svc_create_held_runs: last, released before the flush).
CREATE FUNCTION svc_feed_batch(args jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  p_batch uuid := svc_arg(args, 'batch_id')::uuid;
  p_max int := svc_arg(args, 'max_start')::int;
  b batches%ROWTYPE;
  ended_now boolean := false;
  n_settled int := 0;
  n_done int := 0;
  n_failed int := 0;
  n_cancelled int := 0;
  charged bigint := 0;
  released bigint := 0;
  room int;
  left_micros bigint;
  to_start jsonb := '[]'::jsonb;
  start_rows int[] := '{}';
  start_caps bigint[] := '{}';
  start_tokens text[] := '{}';
  first_idx int;
  n_started int;
  held_added bigint;
  results jsonb;
  started jsonb := '[]'::jsonb;
  refused int := 0;
  i int;
  cancel_runs jsonb := '[]'::jsonb;
  stop_code text;
  stop_message text;
  n_capped int := 0;
  capped boolean := false;
BEGIN
  SELECT * INTO b FROM batches WHERE id = p_batch FOR NO KEY UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    IF EXISTS (SELECT 1 FROM batches WHERE id = p_batch) THEN
      RETURN jsonb_build_object('busy', true);
    END IF;
    RETURN jsonb_build_object('found', false);
  END IF;
  IF b.status NOT IN ('running', 'cancelling') THEN
    RETURN jsonb_build_object('org_id', b.org_id, 'status', b.status, 'ended', false, 'settled', 0, 'started', '[]'::jsonb,
                              'cancel_runs', '[]'::jsonb, 'pending', b.pending_rows, 'running', b.running_rows);
  END IF;

  -- 1. Rows whose run ended and owes nothing more, in the order their runs finished.
  WITH ended AS (
    SELECT br.row, ru.status AS run_status, ru.charged_micros, ru.outputs, ru.error, br.held_micros,
           b.ended_seq + row_number() OVER (ORDER BY ru.finished_at, br.row) AS seq
    FROM batch_rows br JOIN runs ru ON ru.id = br.run_id
    WHERE br.batch_id = p_batch AND br.status = 'running'
      AND ru.status NOT IN ('pending', 'running') AND ru.reserved_micros = 0 AND ru.spent_micros = ru.charged_micros
  ), settled AS (
    UPDATE batch_rows br
    SET status = CASE e.run_status WHEN 'completed' THEN 'completed' WHEN 'cancelled' THEN 'cancelled' ELSE 'failed' END,
        cost_micros = br.cost_micros + e.charged_micros, held_micros = 0, outputs = e.outputs, error = e.error,
        ended_seq = e.seq, finished_at = now()
    FROM ended e WHERE br.batch_id = p_batch AND br.row = e.row
    RETURNING br.status, e.charged_micros, e.held_micros, e.error
  )
  SELECT count(*), count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed'),
         count(*) FILTER (WHERE status = 'cancelled'), COALESCE(sum(charged_micros), 0), COALESCE(sum(held_micros), 0),
         count(*) FILTER (WHERE status = 'failed' AND error->>'code' = 'spend_cap_exceeded' AND held_micros < b.row_cap_micros)
  INTO n_settled, n_done, n_failed, n_cancelled, charged, released, n_capped FROM settled;
  b.ended_seq := b.ended_seq + n_settled;
  b.running_rows := b.running_rows - n_settled;
  b.completed_rows := b.completed_rows + n_done;
  b.failed_rows := b.failed_rows + n_failed;
  b.cancelled_rows := b.cancelled_rows + n_cancelled;
  b.spent_micros := b.spent_micros + charged;
  b.held_micros := b.held_micros - released;
  -- A row started with less than its cap (what the batch's cap had left) stopped at that cap: the
  -- batch's cap has no room for another row's worst case. No more rows start (each would stop
  -- the same way, one at a time); the rows left fail once those in flight have ended.
  IF n_capped > 0 AND b.status = 'running' AND b.stop_reason IS NULL THEN
    b.stop_reason := jsonb_build_object('code', 'spend_cap_exceeded',
      'message', 'the batch''s spend cap has no room left for a row''s worst case; retry the failed rows with a larger maxCostUsd (POST /v1/batches/' || b.id || '/retry)');
  END IF;

  -- 2. The deadline.
  IF b.status = 'running' AND b.deadline_at IS NOT NULL AND b.deadline_at <= now() THEN
    b.status := 'cancelling';
    b.stop_reason := jsonb_build_object('code', 'cancelled', 'message', 'the batch passed its deadline (Max-Duration-Seconds); rows not started were cancelled');
  END IF;

  -- 3. A cancelling batch: rows not started never start; those in flight are cancelled by the caller.
  IF b.status = 'cancelling' THEN
    IF b.pending_rows > 0 THEN
      i := svc_end_pending_rows(p_batch, b.ended_seq, 'cancelled',
                                jsonb_build_object('code', 'cancelled', 'message', 'the batch was cancelled before this row started'));
      b.ended_seq := b.ended_seq + i;
      b.cancelled_rows := b.cancelled_rows + i;
      b.pending_rows := b.pending_rows - i;
      n_settled := n_settled + i;
    END IF;
    SELECT COALESCE(jsonb_agg(run_id), '[]'::jsonb) INTO cancel_runs FROM batch_rows WHERE batch_id = p_batch AND status = 'running';
  END IF;

  -- 4. Start rows.
  IF b.status = 'running' AND b.pending_rows > 0 THEN
    room := LEAST(b.concurrency - b.running_rows, p_max);
    left_micros := b.cap_micros - b.spent_micros - b.held_micros;
    capped := COALESCE(b.stop_reason->>'code' = 'spend_cap_exceeded', false);
    IF room > 0 AND left_micros > 0 AND NOT capped THEN
      first_idx := (b.template->>'first_step')::int;
      -- In row order, each row's run is capped at the least of the row cap and what the batch's
      -- cap leaves after the rows before it; rows from the first that would get nothing wait.
      -- A lone local first step whose worst case fits the run's cap is stored reserved with the
      -- run, under a new attempt token its job carries (as RunStarter stores a run's). One
      -- statement for the turn's rows (a loop appending to jsonb copied the array each time).
      WITH picked AS (
        SELECT q.row, q.inputs, q.first_estimate_micros,
               LEAST(b.row_cap_micros, left_micros - (row_number() OVER (ORDER BY q.row) - 1) * b.row_cap_micros) AS cap
        FROM (SELECT br.row, br.inputs, br.first_estimate_micros FROM batch_rows br
              WHERE br.batch_id = p_batch AND br.status = 'pending' ORDER BY br.row LIMIT room) q
      ), chosen AS (
        SELECT p.row, p.inputs, p.cap,
               CASE WHEN first_idx IS NOT NULL AND p.first_estimate_micros IS NOT NULL AND p.first_estimate_micros <= p.cap
                    THEN gen_random_uuid()::text END AS token,
               p.first_estimate_micros
        FROM picked p WHERE p.cap > 0
      )
      SELECT COALESCE(array_agg(c.row ORDER BY c.row), '{}'), COALESCE(array_agg(c.cap ORDER BY c.row), '{}'),
             COALESCE(array_agg(c.token ORDER BY c.row), '{}'),
             COALESCE(jsonb_agg(jsonb_build_object(
               'user_id', b.user_id, 'token_id', b.token_id, 'workflow_id', b.workflow_id, 'workflow_version_id', b.workflow_version_id,
               'definition', b.definition, 'inputs', c.inputs, 'cap_micros', c.cap, 'status', 'running', 'require_credit', true,
               'reserved_micros', CASE WHEN c.token IS NULL THEN 0 ELSE c.first_estimate_micros END, 'run_id', NULL,
               'output_cache', b.output_cache, 'node_entries', b.template->'node_entries', 'batch_id', b.id,
               'steps', CASE WHEN c.token IS NULL THEN b.template->'steps'
                             ELSE jsonb_set(jsonb_set(b.template->'steps', ARRAY[first_idx::text, 'token'], to_jsonb(c.token)),
                                            ARRAY[first_idx::text, 'reserved_micros'], to_jsonb(c.first_estimate_micros)) END
             ) ORDER BY c.row), '[]'::jsonb)
      INTO start_rows, start_caps, start_tokens, to_start
      FROM chosen c;
    END IF;
    IF jsonb_array_length(to_start) > 0 THEN
      results := svc_create_held_runs(b.org_id, to_start)->'results';
      -- The rows whose run was stored (a run the organization's balance refused has no id) run it.
      WITH made AS (
        SELECT s.row, s.cap, s.token, s.ord, (r.value->>'id')::uuid AS run_id
        FROM unnest(start_rows, start_caps, start_tokens) WITH ORDINALITY AS s(row, cap, token, ord)
        JOIN jsonb_array_elements(results) WITH ORDINALITY AS r(value, ord) ON r.ord = s.ord
      ), running AS (
        UPDATE batch_rows br SET status = 'running', run_id = m.run_id, held_micros = m.cap, attempts = br.attempts + 1
        FROM made m WHERE br.batch_id = p_batch AND br.row = m.row AND m.run_id IS NOT NULL
        RETURNING m.row, m.run_id, m.cap, m.token, m.ord
      )
      SELECT count(*), COALESCE(sum(r.cap), 0),
             COALESCE(jsonb_agg(jsonb_build_object('row', r.row, 'run_id', r.run_id, 'inputs', to_start->(r.ord::int - 1)->'inputs', 'token', r.token)
                                ORDER BY r.ord), '[]'::jsonb)
      INTO n_started, held_added, started
      FROM running r;
      refused := array_length(start_rows, 1) - n_started;
      b.held_micros := b.held_micros + held_added;
      b.running_rows := b.running_rows + n_started;
      b.pending_rows := b.pending_rows - n_started;
    END IF;
    -- Nothing in flight that could give money back, and nothing could start: the rows left fail.
    IF b.running_rows = 0 AND b.pending_rows > 0 AND (refused > 0 OR capped OR b.cap_micros - b.spent_micros - b.held_micros <= 0) THEN
      IF capped THEN
        stop_code := 'spend_cap_exceeded';
        stop_message := b.stop_reason->>'message';
      ELSIF refused > 0 THEN
        stop_code := 'insufficient_credit';
        stop_message := 'your organization''s available balance could not hold a row''s cap; add credit, then retry the failed rows (POST /v1/batches/' || b.id || '/retry)';
      ELSE
        stop_code := 'spend_cap_exceeded';
        stop_message := 'the batch''s spend cap is spent; retry the failed rows with a larger maxCostUsd (POST /v1/batches/' || b.id || '/retry)';
      END IF;
      b.stop_reason := jsonb_build_object('code', stop_code, 'message', stop_message);
      i := svc_end_pending_rows(p_batch, b.ended_seq, 'failed', jsonb_build_object('code', stop_code, 'message', 'not started: ' || stop_message));
      b.ended_seq := b.ended_seq + i;
      b.failed_rows := b.failed_rows + i;
      b.pending_rows := b.pending_rows - i;
      n_settled := n_settled + i;
    END IF;
  END IF;

  -- 5. The end.
  IF b.pending_rows = 0 AND b.running_rows = 0 THEN
    b.status := CASE WHEN b.status = 'cancelling' THEN 'cancelled' ELSE 'completed' END;
    b.finished_at := now();
    IF b.webhook_url IS NOT NULL THEN
      b.webhook_state := 'pending';
      b.webhook_next_at := now();
    END IF;
    ended_now := true;
  END IF;

  UPDATE batches SET status = b.status, spent_micros = b.spent_micros, held_micros = b.held_micros, pending_rows = b.pending_rows,
                     running_rows = b.running_rows, completed_rows = b.completed_rows, failed_rows = b.failed_rows,
                     cancelled_rows = b.cancelled_rows, ended_seq = b.ended_seq, stop_reason = b.stop_reason,
                     finished_at = b.finished_at, webhook_state = b.webhook_state, webhook_next_at = b.webhook_next_at
  WHERE id = p_batch;
  RETURN jsonb_build_object('org_id', b.org_id, 'status', b.status, 'ended', ended_now, 'settled', n_settled, 'started', started,
                            'cancel_runs', cancel_runs, 'pending', b.pending_rows, 'running', b.running_rows);
END $$;
