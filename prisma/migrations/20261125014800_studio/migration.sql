-- The web editor (studio): canvas layouts, when the draft last changed, changelog notes, and
-- the run listing's filter by workflow.

-- AlterTable
ALTER TABLE "workflows" ADD COLUMN     "draft_changed_at" TIMESTAMPTZ(3),
ADD COLUMN     "draft_layout" JSONB;

-- AlterTable
ALTER TABLE "workflow_versions" ADD COLUMN     "layout" JSONB,
ADD COLUMN     "note" TEXT;

-- CreateIndex
CREATE INDEX "runs_org_id_workflow_id_created_at_idx" ON "runs"("org_id", "workflow_id", "created_at" DESC);

-- When the draft of an existing workflow last changed, as far as can be told: a published
-- workflow whose draft is its newest version's definition changed last when that version was
-- published (nothing pending); one whose draft differs changed after it. A never-published
-- draft changed at its last update.
UPDATE workflows w
   SET draft_changed_at = CASE WHEN v.definition = w.draft THEN v.created_at
                               ELSE GREATEST(w.updated_at, v.created_at + interval '1 millisecond') END
  FROM (SELECT DISTINCT ON (workflow_id) workflow_id, definition, created_at
          FROM workflow_versions ORDER BY workflow_id, sequence DESC) v
 WHERE v.workflow_id = w.id AND w.draft IS NOT NULL;
UPDATE workflows SET draft_changed_at = updated_at
 WHERE draft IS NOT NULL AND draft_changed_at IS NULL;
