-- Per-organization concurrency limits of fair scheduling (docs/scheduling.md): the step jobs one
-- organization may have queued or running at once, set by an operator (`admin org limit`); null
-- keeps the deployment's ORG_STEP_CONCURRENCY. Workers copy the set ones into Redis, where the
-- dispatch scripts read them.

-- AlterTable
ALTER TABLE "organizations" ADD COLUMN     "step_concurrency" INTEGER;

ALTER TABLE "organizations" ADD CONSTRAINT "organizations_step_concurrency_check" CHECK ("step_concurrency" IS NULL OR "step_concurrency" >= 0);
