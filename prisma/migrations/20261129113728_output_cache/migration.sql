-- Output caching (docs/runs.md, Output caching): the run's Output-Cache option (auto, llm, off;
-- null: auto), read by its steps; and the cache's entries, one per organization and key (a hash
-- of the node and its inputs), bounded per organization by least recent use, each expiring no
-- later than the run artifacts its outputs name and deleted with the run that computed it.

-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "output_cache" TEXT;

-- CreateTable
CREATE TABLE "output_cache_entries" (
    "org_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "node" TEXT NOT NULL,
    "outputs" JSONB NOT NULL,
    "bytes" INTEGER NOT NULL,
    "run_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "output_cache_entries_pkey" PRIMARY KEY ("org_id","key")
);

-- CreateIndex
CREATE INDEX "output_cache_entries_org_id_last_used_at_idx" ON "output_cache_entries"("org_id", "last_used_at");

-- CreateIndex
CREATE INDEX "output_cache_entries_run_id_idx" ON "output_cache_entries"("run_id");

-- AddForeignKey
ALTER TABLE "output_cache_entries" ADD CONSTRAINT "output_cache_entries_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
