-- AlterTable
ALTER TABLE "oauth_grants" ADD COLUMN     "device_client_id" TEXT,
ADD COLUMN     "expires_at" TIMESTAMPTZ(3),
ALTER COLUMN "client_id" DROP NOT NULL;
