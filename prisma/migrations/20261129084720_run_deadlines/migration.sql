-- A run's own deadline (maxDurationSeconds, docs/runs.md, Cancellation): the run is cancelled if
-- still unfinished then. The index holds unfinished runs with a deadline only: the deadline sweep
-- reads them by deadline every second, and a finished run leaves it.

-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "deadline_at" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "runs_unfinished_deadline_at_idx" ON "runs"("deadline_at") WHERE (deadline_at IS NOT NULL AND status = ANY (ARRAY['pending'::text, 'running'::text]));
