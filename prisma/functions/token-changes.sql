-- Access token changes that authentication must see at once: a revocation, a new expiry or
-- scopes, a deleted row (a user's or organization's deletion cascades here). REPEATABLE (see
-- README.md). Each API process keeps the tokens it has authenticated in memory
-- (services/api/auth/token-cache.ts) and LISTENs on `svc_token_changes`
-- (services/store/token-changes.ts); the notification is sent when the changing
-- transaction commits, whichever code path or process made the change, so no revocation path
-- can forget to tell the caches.
--
-- Payload: the changed row's token_hash (64 hex characters, far below NOTIFY's 8000-byte limit).
-- `last_used_at`, written in batches by every API process, is not among the columns watched.

CREATE OR REPLACE FUNCTION svc_notify_token_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_token_changes', OLD.token_hash);
  RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER access_tokens_changed
AFTER UPDATE OF token_hash, user_id, org_id, scopes, kind, expires_at, revoked_at OR DELETE ON access_tokens
FOR EACH ROW EXECUTE FUNCTION svc_notify_token_change();
