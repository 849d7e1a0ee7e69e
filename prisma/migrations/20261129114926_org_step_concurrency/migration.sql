-- Per-organization concurrency limits of fair scheduling (docs/scheduling.md): the step jobs one
-- organization may have queued or running at once, set by an operator (`admin org limit`); null
-- keeps the deployment's ORG_STEP_CONCURRENCY. Workers copy the set ones into Redis, where the
-- dispatch scripts read them. The admin command checks the value (0 to 1,000,000); no CHECK
-- constraint, which Prisma's schema engine cannot introspect (its drift check panics on it).

-- AlterTable
ALTER TABLE "organizations" ADD COLUMN     "step_concurrency" INTEGER;
