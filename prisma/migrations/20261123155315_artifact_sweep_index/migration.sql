-- DropIndex
DROP INDEX "artifacts_expires_at_idx";

-- CreateIndex
CREATE INDEX "artifacts_deleted_at_expires_at_idx" ON "artifacts"("deleted_at", "expires_at");
