-- Batches (docs/batches.md): a batch, its rows, and each run's batch. The feeders lock a batch
-- row FOR NO KEY UPDATE, which the key-share lock of runs.batch_id's foreign-key check does not wait
-- for. New tables and a nullable column without default: no table rewrite.

-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "batch_id" UUID;

-- CreateTable
CREATE TABLE "batches" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "token_id" UUID,
    "status" TEXT NOT NULL DEFAULT 'running',
    "workflow_id" UUID,
    "workflow_version_id" UUID,
    "workflow_ref" TEXT,
    "definition" JSONB NOT NULL,
    "template" JSONB NOT NULL,
    "row_count" INTEGER NOT NULL,
    "skipped_rows" JSONB NOT NULL DEFAULT '[]',
    "cap_micros" BIGINT NOT NULL,
    "row_cap_micros" BIGINT NOT NULL,
    "spent_micros" BIGINT NOT NULL DEFAULT 0,
    "held_micros" BIGINT NOT NULL DEFAULT 0,
    "concurrency" INTEGER NOT NULL,
    "attempt" INTEGER NOT NULL DEFAULT 1,
    "pending_rows" INTEGER NOT NULL,
    "running_rows" INTEGER NOT NULL DEFAULT 0,
    "completed_rows" INTEGER NOT NULL DEFAULT 0,
    "failed_rows" INTEGER NOT NULL DEFAULT 0,
    "cancelled_rows" INTEGER NOT NULL DEFAULT 0,
    "ended_before_attempt" INTEGER NOT NULL DEFAULT 0,
    "ended_seq" INTEGER NOT NULL DEFAULT 0,
    "output_cache" TEXT,
    "deadline_at" TIMESTAMPTZ(3),
    "stop_reason" JSONB,
    "webhook_url" TEXT,
    "webhook_state" TEXT,
    "webhook_attempts" INTEGER NOT NULL DEFAULT 0,
    "webhook_next_at" TIMESTAMPTZ(3),
    "idempotency_key" TEXT,
    "request_hash" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "attempt_started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "batches_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "batch_rows" (
    "batch_id" UUID NOT NULL,
    "row" INTEGER NOT NULL,
    "inputs" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "run_id" UUID,
    "held_micros" BIGINT NOT NULL DEFAULT 0,
    "cost_micros" BIGINT NOT NULL DEFAULT 0,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "outputs" JSONB,
    "error" JSONB,
    "ended_seq" INTEGER,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "batch_rows_pkey" PRIMARY KEY ("batch_id","row")
);

-- CreateIndex
CREATE INDEX "batches_org_id_created_at_idx" ON "batches"("org_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "batches_unfinished_created_at_idx" ON "batches"("created_at") WHERE (status = ANY (ARRAY['running'::text, 'cancelling'::text]));

-- CreateIndex
CREATE INDEX "batches_webhook_due_idx" ON "batches"("webhook_next_at") WHERE (webhook_state = 'pending');

-- CreateIndex
CREATE UNIQUE INDEX "batches_org_id_idempotency_key_key" ON "batches"("org_id", "idempotency_key");

-- CreateIndex
CREATE INDEX "batch_rows_pending_idx" ON "batch_rows"("batch_id", "row") WHERE (status = 'pending');

-- CreateIndex
CREATE INDEX "batch_rows_running_idx" ON "batch_rows"("batch_id") WHERE (status = 'running');

-- CreateIndex
CREATE INDEX "batch_rows_ended_seq_idx" ON "batch_rows"("batch_id", "ended_seq") WHERE (ended_seq IS NOT NULL);

-- CreateIndex
CREATE INDEX "runs_batch_id_idx" ON "runs"("batch_id") WHERE (batch_id IS NOT NULL);

-- AddForeignKey
ALTER TABLE "runs" ADD CONSTRAINT "runs_batch_id_fkey" FOREIGN KEY ("batch_id") REFERENCES "batches"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "batches" ADD CONSTRAINT "batches_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "batch_rows" ADD CONSTRAINT "batch_rows_batch_id_fkey" FOREIGN KEY ("batch_id") REFERENCES "batches"("id") ON DELETE CASCADE ON UPDATE CASCADE;
