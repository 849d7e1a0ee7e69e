-- Schedules (docs/schedules.md): a schedule, its ticks (the key (schedule, tick time) makes a tick
-- start at most one run), and each run's schedule. New tables and a nullable column without
-- default: no table rewrite.

-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "schedule_id" UUID;

-- CreateTable
CREATE TABLE "schedules" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "name" TEXT,
    "workflow_ref" TEXT NOT NULL,
    "inputs" JSONB NOT NULL,
    "cron" TEXT NOT NULL,
    "timezone" TEXT NOT NULL,
    "cap_micros" BIGINT NOT NULL,
    "monthly_budget_micros" BIGINT,
    "catch_up_seconds" INTEGER NOT NULL,
    "output_cache" TEXT,
    "max_duration_seconds" INTEGER,
    "status" TEXT NOT NULL DEFAULT 'active',
    "pause_reason" JSONB,
    "next_at" TIMESTAMPTZ(3),
    "lease_token" UUID,
    "lease_until" TIMESTAMPTZ(3),
    "last_tick_at" TIMESTAMPTZ(3),
    "last_run_id" UUID,
    "webhook_url" TEXT,
    "webhook_state" TEXT,
    "webhook_attempts" INTEGER NOT NULL DEFAULT 0,
    "webhook_next_at" TIMESTAMPTZ(3),
    "pause_count" INTEGER NOT NULL DEFAULT 0,
    "idempotency_key" TEXT,
    "request_hash" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "schedules_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "schedule_ticks" (
    "schedule_id" UUID NOT NULL,
    "tick_at" TIMESTAMPTZ(3) NOT NULL,
    "status" TEXT NOT NULL,
    "run_id" UUID,
    "skipped_through" TIMESTAMPTZ(3),
    "skipped_count" INTEGER NOT NULL DEFAULT 0,
    "error" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "schedule_ticks_pkey" PRIMARY KEY ("schedule_id","tick_at")
);

-- CreateIndex
CREATE INDEX "schedules_org_id_created_at_idx" ON "schedules"("org_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "schedules_due_idx" ON "schedules"("next_at") WHERE (status = 'active');

-- CreateIndex
CREATE INDEX "schedules_webhook_due_idx" ON "schedules"("webhook_next_at") WHERE (webhook_state = 'pending');

-- CreateIndex
CREATE UNIQUE INDEX "schedules_org_id_idempotency_key_key" ON "schedules"("org_id", "idempotency_key");

-- CreateIndex
CREATE INDEX "runs_schedule_id_created_at_idx" ON "runs"("schedule_id", "created_at" DESC) WHERE (schedule_id IS NOT NULL);

-- AddForeignKey
ALTER TABLE "runs" ADD CONSTRAINT "runs_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "schedules"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "schedules" ADD CONSTRAINT "schedules_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "schedule_ticks" ADD CONSTRAINT "schedule_ticks_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "schedules"("id") ON DELETE CASCADE ON UPDATE CASCADE;
