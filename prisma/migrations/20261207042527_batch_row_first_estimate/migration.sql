-- A batch row's first-step estimate (docs/batches.md, How rows run): a row whose run's lone first
-- step is a local node is stored with that step's worst case, so the feed reserves the step with
-- the run (as a run of POST /v1/runs is) and its worker starts without a reservation round trip.
-- A nullable column without default: no table rewrite; rows stored before it are reserved by
-- their workers as before.

-- AlterTable
ALTER TABLE "batch_rows" ADD COLUMN     "first_estimate_micros" BIGINT;
