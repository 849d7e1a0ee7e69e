-- The ledger's tie to its organization. REPEATABLE (see README.md). ledger_entries.org_id has no
-- foreign key (migration ledger_org_without_foreign_key: its check locked the organization's row
-- at every step charge); the one thing the key did beyond that check, deleting an organization's
-- entries with it, is this trigger's. Inserts need no check: a charge copies its run's org_id, and
-- a credit, refund or adjustment writes its organization's row in the same transaction.

-- svc_delete_org_ledger() RETURNS trigger
-- AFTER DELETE of an organization: deletes its ledger entries (what ON DELETE CASCADE did).
-- Locks: the deleted organization's entries.
CREATE OR REPLACE FUNCTION svc_delete_org_ledger() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM ledger_entries WHERE org_id = OLD.id;
  RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER organizations_delete_ledger AFTER DELETE ON organizations
FOR EACH ROW EXECUTE FUNCTION svc_delete_org_ledger();
