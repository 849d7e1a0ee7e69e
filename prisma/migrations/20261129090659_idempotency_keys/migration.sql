-- Idempotency keys of run creations (docs/runs.md, Idempotent run creation): one row per
-- (organization, key), written by svc_create_runs under the organization's row lock, so two
-- requests with one key never both start a run. No foreign key to organizations (its check would
-- lock the organization's row); the row goes with its run.

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "org_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "request_hash" TEXT NOT NULL,
    "run_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("org_id","key")
);

-- CreateIndex
CREATE INDEX "idempotency_keys_created_at_idx" ON "idempotency_keys"("created_at");

-- CreateIndex
CREATE INDEX "idempotency_keys_run_id_idx" ON "idempotency_keys"("run_id");

-- AddForeignKey
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
