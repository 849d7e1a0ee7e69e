-- Stopped runs that still reserve money: attempts lost with their workers after a sibling failed
-- the run. The reaper settles them (services/runs/run-reaper.ts); a finished run that reserves
-- nothing adds no entry, so a run's completion costs this index nothing.
-- Building an index holds off writes to runs while it lasts (a migration runs in one transaction,
-- so not CONCURRENTLY): on a table of millions of runs, migrate in a quiet moment.

-- CreateIndex
CREATE INDEX "runs_stopped_reserving_idx" ON "runs"("finished_at") WHERE (status <> ALL (ARRAY['pending'::text, 'running'::text]) AND reserved_micros > 0);
