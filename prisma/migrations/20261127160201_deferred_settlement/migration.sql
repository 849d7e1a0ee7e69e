-- Deferred settlement: an unfinished run's step charges go to the ledger and to the run's row at
-- each commit, but reach its organization's row (balance_micros and held_micros) only when the run
-- finishes (docs/money.md, Deferred settlement). Before, every commit of every run of an
-- organization wrote the organization's one row, and the commits of its concurrent runs queued on
-- that row's lock, each for its neighbour's fsync (bench B8). settled_micros is what of
-- charged_micros the organization row already reflects; the functions that keep it are in
-- prisma/functions/ (money-holds.sql).

-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "settled_micros" BIGINT NOT NULL DEFAULT 0;

-- Every charge made so far was applied to its organization at once.
UPDATE runs SET settled_micros = charged_micros WHERE charged_micros <> 0;

-- CreateIndex
-- An organization's balance subtracts what its unfinished runs were charged and its row does not show yet.
CREATE INDEX "runs_org_id_status_idx" ON "runs"("org_id", "status");
