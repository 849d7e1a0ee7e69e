-- Holds: money held against an organization's balance for its unfinished runs, so the balance
-- never goes below zero (docs/money.md, Holds). The functions that keep these columns are in
-- prisma/functions/ (repeatable: re-applied when they change), not here.

-- AlterTable
ALTER TABLE "organizations" ADD COLUMN "held_micros" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "runs" ADD COLUMN "authorized_micros" BIGINT,
ADD COLUMN "charged_micros" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN "held_micros" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "steps" ADD COLUMN "lost_charge_micros" BIGINT NOT NULL DEFAULT 0;

-- What each run has been charged so far.
UPDATE runs r SET charged_micros = c.total
FROM (SELECT run_id, -sum(amount_micros) AS total FROM ledger_entries WHERE kind = 'run_charge' AND run_id IS NOT NULL GROUP BY run_id) c
WHERE c.run_id = r.id;

-- Runs stored before holds existed are authorized up to their cap and hold what they may still
-- spend (their organization's available balance may then be negative until they finish).
UPDATE runs SET authorized_micros = cap_micros,
                held_micros = GREATEST(0, CASE WHEN status IN ('pending', 'running') THEN cap_micros - charged_micros
                                               ELSE reserved_micros + spent_micros - charged_micros END);
UPDATE organizations o SET held_micros = h.total
FROM (SELECT org_id, sum(held_micros) AS total FROM runs GROUP BY org_id) h
WHERE h.org_id = o.id;

-- Overdrafts from before holds existed (concurrent admissions could overspend a balance) are
-- written off by an explicit entry, so the balance can be checked from now on (the trigger of
-- prisma/functions/money-checks.sql: a CHECK constraint would be the natural form, but the
-- offline schema engine that checks drift panics on CHECK constraints).
INSERT INTO ledger_entries (org_id, amount_micros, kind, note)
SELECT id, -balance_micros, 'adjustment', 'overdraft from before holds existed, written off'
FROM organizations WHERE balance_micros < 0;
UPDATE organizations SET balance_micros = 0 WHERE balance_micros < 0;

-- Repeatable SQL files (prisma/functions/*.sql) applied so far, by checksum.
CREATE TABLE "_svc_repeatable_sql" (
    "name" TEXT NOT NULL,
    "checksum" VARCHAR(64) NOT NULL,
    "applied_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "_svc_repeatable_sql_pkey" PRIMARY KEY ("name")
);
