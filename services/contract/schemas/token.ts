import { Type, type Static } from '@sinclair/typebox';
import { strictObject } from './strict-object';

/** Longest lifetime of a personal access token (SPEC: at most 365 days). */
export const MAX_TOKEN_DAYS = 365;

const ScopeSchema = Type.Union([Type.Literal('read'), Type.Literal('run')]);
const TokenKindSchema = Type.Union([Type.Literal('personal'), Type.Literal('session'), Type.Literal('browser'), Type.Literal('oauth')]);

/** `POST /v1/tokens`: a new personal access token. */
export const TokenCreateInputSchema = strictObject({
  name: Type.String({ minLength: 1, maxLength: 100, description: 'What the token is for, shown in listings (not blank)' }),
  // maxItems: every scope once; ajv checks it before uniqueItems, which compares every pair.
  scopes: Type.Array(ScopeSchema, { minItems: 1, maxItems: 2, uniqueItems: true, description: 'read: the catalog and workflows; run: runs and run history' }),
  expiresInDays: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TOKEN_DAYS, description: `Days until it expires, at most ${MAX_TOKEN_DAYS}; omit for no expiry` })),
});
export type TokenCreateInput = Static<typeof TokenCreateInputSchema>;

/** A token as its owner sees it in a listing: never the secret. */
export const TokenSummarySchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  kind: TokenKindSchema,
  name: Type.String(),
  /** The first characters of the value, e.g. `svc_4fQx91Ab`, to recognise it. */
  prefix: Type.String(),
  scopes: Type.Array(ScopeSchema),
  createdAt: Type.String({ format: 'date-time' }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'Updated within a minute of use' }),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
export type TokenSummaryBody = Static<typeof TokenSummarySchema>;

/** The answer to a creation: the summary and, this once, the value. */
export const TokenCreatedSchema = Type.Object({ ...TokenSummarySchema.properties, token: Type.String({ description: 'The full value; shown only now' }) });
export type TokenCreatedBody = Static<typeof TokenCreatedSchema>;

export const TokenListSchema = Type.Object({ tokens: Type.Array(TokenSummarySchema) });
export type TokenListBody = Static<typeof TokenListSchema>;
