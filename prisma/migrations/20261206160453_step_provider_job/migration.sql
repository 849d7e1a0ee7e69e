-- The provider job (a fal queue request, a Replicate prediction) the running attempt submitted,
-- with the attempt's number: a worker taking the step over from a dead one resumes that job
-- instead of submitting it again (docs/runs.md). Nullable, no default: no table rewrite.

-- AlterTable
ALTER TABLE "steps" ADD COLUMN     "provider_job" JSONB;
