-- Ticks left half begun (status 'starting': a worker stopped mid-tick) are found by the schedule
-- sweep without reading every tick, a paused schedule's included (services/store/schedule-repository.ts claimDue).
-- CreateIndex
CREATE INDEX "schedule_ticks_starting_idx" ON "schedule_ticks"("schedule_id") WHERE (status = 'starting');
