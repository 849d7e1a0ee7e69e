import { Type } from '@sinclair/typebox';
import { defineOperation } from '../operation';
import { strictObject } from '../schemas/strict-object';
import { TokenCreatedSchema, TokenCreateInputSchema, TokenListSchema } from '../schemas/token';

/**
 * Minting and revoking tokens needs a signed-in person: the web editor's session or the CLI's
 * device-login session. A personal access token cannot mint more of itself, so a leaked one
 * cannot be used to hide behind new ones (docs/auth.md).
 */
const PEOPLE = ['browser', 'session'] as const;

const ScopeListSchema = Type.Array(Type.Union([Type.Literal('read'), Type.Literal('run')]));

/** `GET /v1/me` (`svc whoami`): who the caller is, for which organization, with what credential. */
export const meGet = defineOperation({
  name: 'me.get',
  summary: 'Who the caller is',
  http: { method: 'GET', path: '/v1/me', pathParams: [], noStore: true },
  mcpTool: 'me_get',
  scope: null,
  auth: 'required',
  input: strictObject({}),
  output: Type.Object({
    user: Type.Object({ id: Type.String({ format: 'uuid' }), email: Type.String(), name: Type.String() }),
    organization: Type.Object({ id: Type.String({ format: 'uuid' }), slug: Type.String(), name: Type.String() }),
    token: Type.Object({
      id: Type.String({ format: 'uuid' }),
      kind: Type.Union([Type.Literal('personal'), Type.Literal('session'), Type.Literal('browser'), Type.Literal('oauth')]),
      name: Type.String(),
      displayPrefix: Type.String(),
      scopes: ScopeListSchema,
      expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    }),
  }),
  response: 'json',
  errors: ['unauthorized', 'rate_limited'],
  spendsMoney: false,
  readOnly: true,
});

/** `GET /v1/tokens`: the caller's live tokens in their organization. */
export const tokensList = defineOperation({
  name: 'tokens.list',
  summary: 'List your live access tokens',
  http: { method: 'GET', path: '/v1/tokens', pathParams: [] },
  mcpTool: 'tokens_list',
  scope: null,
  auth: 'required',
  input: strictObject({}),
  output: TokenListSchema,
  response: 'json',
  errors: ['unauthorized', 'rate_limited'],
  spendsMoney: false,
  readOnly: true,
});

/** `POST /v1/tokens`: a new personal access token; its value is answered this once. */
export const tokensCreate = defineOperation({
  name: 'tokens.create',
  summary: 'Create a personal access token',
  http: { method: 'POST', path: '/v1/tokens', pathParams: [], status: 201, noStore: true },
  mcpTool: 'tokens_create',
  scope: null,
  kinds: PEOPLE,
  auth: 'required',
  input: TokenCreateInputSchema,
  output: TokenCreatedSchema,
  response: 'json',
  errors: ['validation_failed', 'unauthorized', 'forbidden', 'insufficient_scope', 'rate_limited'],
  spendsMoney: false,
  readOnly: false,
});

/** `DELETE /v1/tokens/:id`: revoke one of your tokens; the next request with it is refused. */
export const tokensRevoke = defineOperation({
  name: 'tokens.revoke',
  summary: 'Revoke an access token',
  http: { method: 'DELETE', path: '/v1/tokens/:id', pathParams: ['id'], status: 204 },
  mcpTool: 'tokens_revoke',
  scope: null,
  kinds: PEOPLE,
  auth: 'required',
  input: strictObject({ id: Type.String({ minLength: 1, description: 'Token id' }) }),
  output: Type.Null(),
  response: 'json',
  errors: ['unauthorized', 'forbidden', 'not_found', 'rate_limited'],
  spendsMoney: false,
  readOnly: false,
});
