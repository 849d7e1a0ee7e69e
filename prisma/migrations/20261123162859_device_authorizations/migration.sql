-- CreateTable
CREATE TABLE "device_authorizations" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "device_code_hash" TEXT NOT NULL,
    "user_code_hash" TEXT NOT NULL,
    "client_id" TEXT NOT NULL,
    "scopes" TEXT[],
    "status" TEXT NOT NULL DEFAULT 'pending',
    "interval_seconds" INTEGER NOT NULL DEFAULT 5,
    "last_polled_at" TIMESTAMPTZ(3),
    "user_id" UUID,
    "org_id" UUID,
    "token_id" UUID,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "decided_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "device_authorizations_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "device_authorizations_device_code_hash_key" ON "device_authorizations"("device_code_hash");

-- CreateIndex
CREATE UNIQUE INDEX "device_authorizations_user_code_hash_key" ON "device_authorizations"("user_code_hash");

-- CreateIndex
CREATE UNIQUE INDEX "device_authorizations_token_id_key" ON "device_authorizations"("token_id");

-- CreateIndex
CREATE INDEX "device_authorizations_expires_at_idx" ON "device_authorizations"("expires_at");

-- AddForeignKey
ALTER TABLE "device_authorizations" ADD CONSTRAINT "device_authorizations_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "device_authorizations" ADD CONSTRAINT "device_authorizations_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "device_authorizations" ADD CONSTRAINT "device_authorizations_token_id_fkey" FOREIGN KEY ("token_id") REFERENCES "access_tokens"("id") ON DELETE SET NULL ON UPDATE CASCADE;
