-- The ledger's org_id without a foreign key to organizations. The key's check locked the
-- organization's row FOR KEY SHARE at every step charge, beside the creations and settlements of
-- the same organization's runs that lock it FOR NO KEY UPDATE: a row locked by two transactions at
-- once gets a multixact, and every later lock of it reads the multixact SLRU (bench B8: about 3
-- multixacts per run on 2 cores, all on organizations; LWLock:MultiXactMemberSLRU waits in
-- svc_complete_step growing to 23% on 16 cores). Every writer of an entry already ties it to its
-- organization: a charge copies the org_id of its run (whose own key holds), a credit writes the
-- organization's row in the same transaction. The cascade on an organization's deletion is kept by
-- a trigger (prisma/functions/ledger-entries.sql).

-- DropForeignKey
ALTER TABLE "ledger_entries" DROP CONSTRAINT "ledger_entries_org_id_fkey";
