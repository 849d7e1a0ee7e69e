-- Reading the one jsonb argument of the functions in this folder (README.md, Conventions).
-- REPEATABLE: re-applied by services/store/migration-runner.ts whenever this file changes.

DROP FUNCTION IF EXISTS svc_arg(jsonb, text);
DROP FUNCTION IF EXISTS svc_missing_arg(text);

-- svc_missing_arg(key text) RETURNS text
-- Raises: the argument object has no key `key` (svc_arg's failure). VOLATILE, so the planner
-- never evaluates it ahead of time when svc_arg's arguments are constants.
-- Locks: none.
CREATE FUNCTION svc_missing_arg(key text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION 'svc_arg: the argument object has no key "%"', key USING ERRCODE = 'invalid_parameter_value';
END $$;

-- svc_arg(args jsonb, key text) RETURNS text
-- The value of a required key as text (a JSON null reads as SQL NULL); raises when the key is
-- absent (or args is null), so a caller that misspells a key fails loudly instead of passing NULL
-- along. One SQL expression, so that Postgres inlines it into its callers' statements: a call of
-- its own was about 15 per run, each a PL/pgSQL function call (docs/performance/postgres.md,
-- Instructions per run).
-- Locks: none.
CREATE FUNCTION svc_arg(args jsonb, key text) RETURNS text
LANGUAGE sql VOLATILE AS $$
  SELECT CASE WHEN args ? key THEN args->>key ELSE svc_missing_arg(key) END
$$;
