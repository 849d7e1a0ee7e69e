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
DROP FUNCTION IF EXISTS svc_charge_ledger(uuid, uuid, uuid[]);
DROP FUNCTION IF EXISTS svc_store_run(runs, runs);
DROP FUNCTION IF EXISTS svc_store_run(runs, runs, boolean);
DROP FUNCTION IF EXISTS svc_org_balance(uuid);
DROP FUNCTION IF EXISTS svc_release_locks_before_flush();
DROP FUNCTION IF EXISTS svc_settle_org(uuid, bigint, bigint);

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

-- svc_charge_ledger(p_run uuid, p_org uuid, p_steps uuid[]) RETURNS bigint
-- Charges each step of run p_run named in p_steps its total cost (cost_micros as the caller just
-- wrote it) once: one `run_charge` ledger entry per step for organization p_org (the run's; unique
-- on (step_id, kind): a step charged before is left as it is). Answers what it charged in all
-- (micro-USD, >= 0), for the caller to add to the run's charged_micros in its one write of the
-- run row (svc_store_run).
-- Locks: none beyond the entries it inserts (ledger_entries.org_id has no foreign key).
CREATE FUNCTION svc_charge_ledger(p_run uuid, p_org uuid, p_steps uuid[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  charged bigint;
BEGIN
  -- PL/pgSQL, not SQL: its statement's plan is cached for the session, a SQL function's is made at every call.
  WITH entries AS (
    INSERT INTO ledger_entries (org_id, amount_micros, kind, run_id, step_id, note)
    SELECT p_org, -s.cost_micros, 'run_charge', s.run_id, s.id, 'step ' || s.node_id
    FROM steps s WHERE s.id = ANY(p_steps) AND s.run_id = p_run AND s.cost_micros > 0
    ON CONFLICT (step_id, kind) DO NOTHING
    RETURNING amount_micros)
  SELECT COALESCE(-sum(amount_micros), 0)::bigint INTO charged FROM entries;
  RETURN charged;
END $$;

-- svc_store_run(old runs, nr runs, p_apply boolean DEFAULT true) RETURNS jsonb
-- Writes run nr (the caller's new state of the row old, which it read and locked in this
-- transaction: its status, outputs, error, times and amounts, charged_micros including what
-- svc_charge_ledger just charged) with ONE update of the run row, the run's hold recomputed
-- (svc_run_hold), and brings the organization's row up to date when it must:
--
-- - An unfinished run whose hold fell by exactly what it was charged is left out of the
--   organization's row (Deferred settlement in docs/money.md: the row still counts the charge in
--   held_micros, so balance less held, what admission reads, is already right, and the
--   organization's concurrent runs do not queue on its row at every commit).
-- - Otherwise (the run finished, or its hold moved otherwise) it is settled: before, the row
--   counted the run's hold (old.held_micros) and its deferred charges (old.charged_micros -
--   old.settled_micros) in held_micros, and only old.settled_micros of its charges in
--   balance_micros; afterwards it counts the new hold, and all its charges in the balance.
--
-- One update, not one per change: the second update of a row in a transaction re-checks every
-- foreign key of the row (Postgres checks the keys of a row version this transaction made, changed
-- or not), and the check of runs.org_id locks the organization's row FOR KEY SHARE beside the
-- creations that lock it FOR NO KEY UPDATE: a multixact per commit (bench B8 counts them).
-- A run stored before holds (null authorization) holds nothing and is settled at each charge.
--
-- With p_apply false the organization's row is left to the caller: the answer is what settling
-- adds to it, {org_id, balance_micros, held_micros} (null when the run does not settle), for a
-- caller that settles several runs and writes the row once for all of them, in the same
-- transaction (svc_complete_steps). Otherwise the answer is null.
-- Locks: the run row must be locked by the caller; updates (so locks) the organization row only
-- when it settles, and p_apply.
CREATE FUNCTION svc_store_run(old runs, nr runs, p_apply boolean DEFAULT true) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  new_hold bigint := svc_run_hold(nr);
  settle boolean;
  balance_added bigint;
  held_added bigint;
BEGIN
  IF nr.authorized_micros IS NULL THEN
    settle := nr.charged_micros <> old.charged_micros;
  ELSE
    settle := NOT (nr.status IN ('pending', 'running') AND new_hold + nr.charged_micros = old.held_micros + old.charged_micros)
              AND NOT (new_hold = old.held_micros AND nr.charged_micros = old.charged_micros
                       AND (nr.status IN ('pending', 'running') OR nr.charged_micros = old.settled_micros));
  END IF;
  IF nr.authorized_micros IS NOT NULL OR settle THEN
    nr.held_micros := new_hold;
  END IF;
  IF settle THEN
    nr.settled_micros := nr.charged_micros;
  END IF;
  -- The columns it writes (not the whole rows: their definitions would be compared too).
  IF (nr.status, nr.outputs, nr.error, nr.started_at, nr.finished_at, nr.reserved_micros, nr.spent_micros, nr.charged_micros, nr.held_micros, nr.settled_micros)
     IS DISTINCT FROM (old.status, old.outputs, old.error, old.started_at, old.finished_at, old.reserved_micros, old.spent_micros, old.charged_micros,
                       old.held_micros, old.settled_micros) THEN
    UPDATE runs SET status = nr.status, outputs = nr.outputs, error = nr.error, started_at = nr.started_at, finished_at = nr.finished_at,
                    reserved_micros = nr.reserved_micros, spent_micros = nr.spent_micros, charged_micros = nr.charged_micros,
                    held_micros = nr.held_micros, settled_micros = nr.settled_micros
    WHERE id = nr.id;
  END IF;
  IF NOT settle THEN
    RETURN NULL;
  END IF;
  balance_added := -(nr.charged_micros - old.settled_micros);
  held_added := new_hold - old.held_micros - (old.charged_micros - old.settled_micros);
  IF NOT p_apply THEN
    RETURN jsonb_build_object('org_id', old.org_id, 'balance_micros', balance_added, 'held_micros', held_added);
  END IF;
  PERFORM svc_settle_org(old.org_id, balance_added, held_added);
  RETURN NULL;
END $$;

-- svc_settle_org(p_org uuid, p_balance_added bigint, p_held_added bigint) RETURNS void
-- Adds what settling runs adds to organization p_org's row (svc_store_run's answer with p_apply
-- false, summed), its lock released before the commit's flush (svc_release_locks_before_flush).
-- Locks: the organization row.
CREATE FUNCTION svc_settle_org(p_org uuid, p_balance_added bigint, p_held_added bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM svc_release_locks_before_flush();
  UPDATE organizations SET balance_micros = balance_micros + p_balance_added, held_micros = held_micros + p_held_added WHERE id = p_org;
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
LANGUAGE plpgsql AS $$
BEGIN
  -- PL/pgSQL, not SQL: its statement's plan is cached for the session, a SQL function's is made at
  -- every call (twice per run; docs/performance/postgres.md, Instructions per run).
  -- svc.flush_after_commit tells the caller (the session's own synchronous_commit may be off already).
  PERFORM set_config('synchronous_commit', 'off', true), set_config('svc.flush_after_commit', 'on', true);
END $$;

-- svc_org_balance(p_org uuid) RETURNS bigint
-- The organization's balance: its row's balance_micros less what its unfinished runs have been
-- charged that the row does not show yet (deferred until each finishes; svc_store_run). Null
-- when the organization does not exist. A finished run has none deferred (svc_store_run settles
-- it in the transaction that finishes it), so only the unfinished ones are read.
-- Locks: none.
CREATE FUNCTION svc_org_balance(p_org uuid) RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT o.balance_micros - COALESCE((SELECT sum(r.charged_micros - r.settled_micros) FROM runs r
                                       WHERE r.org_id = o.id AND r.status IN ('pending', 'running')), 0)::bigint
  FROM organizations o WHERE o.id = p_org
$$;
