-- Indexes of runs that hold only the rows their queries look for (docs/performance.md, tenth round).
-- The indexes on status now hold unfinished runs only: every query that used them asks for
-- pending or running runs (the reapers and recovery, by age; an organization's balance, by
-- organization). A run's completion changes its status, so its row's update cannot be HOT and adds
-- an entry to every index of runs whose predicate the new row matches: a finished run now matches
-- neither of these. The indexes on a workflow and a version hold only runs that have one (an inline
-- run has neither, and nothing looks runs up by a null reference).
-- Building an index takes a lock that holds off writes to runs while it lasts (a migration runs in
-- one transaction, so not CONCURRENTLY): on a table of millions of runs, migrate in a quiet moment.

-- DropIndex
DROP INDEX "runs_org_id_status_idx";

-- DropIndex
DROP INDEX "runs_org_id_workflow_id_created_at_idx";

-- DropIndex
DROP INDEX "runs_status_created_at_idx";

-- DropIndex
DROP INDEX "runs_workflow_id_idx";

-- DropIndex
DROP INDEX "runs_workflow_version_id_idx";

-- CreateIndex
CREATE INDEX "runs_unfinished_created_at_idx" ON "runs"("created_at") WHERE (status = ANY (ARRAY['pending'::text, 'running'::text]));

-- CreateIndex
CREATE INDEX "runs_unfinished_org_id_idx" ON "runs"("org_id") WHERE (status = ANY (ARRAY['pending'::text, 'running'::text]));

-- CreateIndex
CREATE INDEX "runs_workflow_id_idx" ON "runs"("workflow_id") WHERE (workflow_id IS NOT NULL);

-- CreateIndex
CREATE INDEX "runs_org_id_workflow_id_created_at_idx" ON "runs"("org_id", "workflow_id", "created_at" DESC) WHERE (workflow_id IS NOT NULL);

-- CreateIndex
CREATE INDEX "runs_workflow_version_id_idx" ON "runs"("workflow_version_id") WHERE (workflow_version_id IS NOT NULL);
