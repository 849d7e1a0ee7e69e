-- Invariants of published workflows, held by the database whatever code writes to it
-- (services/store/workflow-repository.ts keeps them too; docs/workflows.md):
--
-- 1. A published version never changes. Only `published_by` may (set to NULL when the
--    publisher's account is deleted); the version is otherwise as it was published.
-- 2. A workflow's slug, once claimed, never changes: its address identifies it for good.
-- 3. A frozen organization slug (it namespaces a published workflow) never changes, and a frozen
--    slug is never thawed.
-- Violations raise check_violation (SQLSTATE 23514) with a message naming the rule.

CREATE FUNCTION svc_workflow_version_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.workflow_id IS DISTINCT FROM OLD.workflow_id
     OR NEW.major IS DISTINCT FROM OLD.major
     OR NEW.minor IS DISTINCT FROM OLD.minor
     OR NEW.patch IS DISTINCT FROM OLD.patch
     OR NEW.sequence IS DISTINCT FROM OLD.sequence
     OR NEW.definition IS DISTINCT FROM OLD.definition
     OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
    RAISE EXCEPTION 'published workflow version % is immutable', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER workflow_versions_immutable
BEFORE UPDATE ON workflow_versions
FOR EACH ROW EXECUTE FUNCTION svc_workflow_version_immutable();

CREATE FUNCTION svc_workflow_slug_permanent() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.slug IS NOT NULL AND NEW.slug IS DISTINCT FROM OLD.slug THEN
    RAISE EXCEPTION 'the slug "%" of workflow % is permanent', OLD.slug, OLD.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER workflows_slug_permanent
BEFORE UPDATE OF slug ON workflows
FOR EACH ROW EXECUTE FUNCTION svc_workflow_slug_permanent();

CREATE FUNCTION svc_organization_slug_frozen() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.slug_frozen AND (NEW.slug IS DISTINCT FROM OLD.slug OR NOT NEW.slug_frozen) THEN
    RAISE EXCEPTION 'the slug "%" of organization % is frozen: it namespaces published workflows', OLD.slug, OLD.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER organizations_slug_frozen
BEFORE UPDATE OF slug, slug_frozen ON organizations
FOR EACH ROW EXECUTE FUNCTION svc_organization_slug_frozen();
