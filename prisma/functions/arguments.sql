-- Reading the one jsonb argument of the functions in this folder (README.md, Conventions).
-- REPEATABLE: re-applied by services/store/migration-runner.ts whenever this file changes.

DROP FUNCTION IF EXISTS svc_arg(jsonb, text);

-- svc_arg(args jsonb, key text) RETURNS text
-- The value of a required key as text (a JSON null reads as SQL NULL); raises when the key is
-- absent, so a caller that misspells a key fails loudly instead of passing NULL along.
-- Locks: none.
CREATE FUNCTION svc_arg(args jsonb, key text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF args IS NULL OR NOT args ? key THEN
    RAISE EXCEPTION 'svc_arg: the argument object has no key "%"', key USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN args->>key;
END $$;
