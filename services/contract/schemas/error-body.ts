import { Type, type Static } from '@sinclair/typebox';

/**
 * The body of every 4xx and 5xx response: `error` tells the caller what to fix; `code` is the
 * stable machine-readable reason (see error-codes.ts); some codes add fields, e.g. 402 adds
 * `balanceUsd`.
 */
export const ErrorBodySchema = Type.Object(
  { error: Type.String(), code: Type.String() },
  { additionalProperties: true },
);
export type ErrorBody = Static<typeof ErrorBodySchema> & Record<string, unknown>;
