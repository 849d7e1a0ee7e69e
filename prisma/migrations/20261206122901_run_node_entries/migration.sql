-- The catalog file entries a run started with, by node id (docs/providers.md, Reloading the
-- catalog): its steps run those definitions whatever a reload changed since. Null for runs that
-- use no catalog file node. A nullable column without a default: no table rewrite.

-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "node_entries" JSONB;
