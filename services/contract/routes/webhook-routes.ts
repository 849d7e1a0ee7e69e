import { Type } from '@sinclair/typebox';
import { WEBHOOK_SECRET_PREFIX } from '../webhook-signature';
import { defineOperation } from '../operation';
import { strictObject } from '../schemas/strict-object';

const SecretSchema = Type.Object({
  secret: Type.String({ pattern: `^${WEBHOOK_SECRET_PREFIX}`, description: "Your organization's webhook signing secret (Standard Webhooks: whsec_ and the base64 of the key)" }),
});

/** `GET /v1/webhooks/secret`: the organization's signing secret, made at its first use (docs/webhooks.md). */
export const webhooksSecret = defineOperation({
  name: 'webhooks.secret',
  summary: "Your organization's webhook signing secret",
  http: { method: 'GET', path: '/v1/webhooks/secret', pathParams: [], noStore: true },
  mcpTool: 'webhooks_secret',
  scope: 'run',
  auth: 'required',
  input: strictObject({}),
  output: SecretSchema,
  response: 'json',
  errors: ['unauthorized', 'insufficient_scope', 'rate_limited'],
  spendsMoney: false,
  readOnly: true,
});

/** `POST /v1/webhooks/secret`: a new signing secret (owners and admins); deliveries from then on are signed with it. */
export const webhooksRotate = defineOperation({
  name: 'webhooks.rotate',
  summary: 'Replace the webhook signing secret',
  http: { method: 'POST', path: '/v1/webhooks/secret', pathParams: [], body: 'empty', noStore: true },
  mcpTool: 'webhooks_rotate',
  scope: 'run',
  auth: 'required',
  input: strictObject({}),
  output: SecretSchema,
  response: 'json',
  errors: ['unauthorized', 'insufficient_scope', 'forbidden', 'rate_limited'],
  spendsMoney: false,
  readOnly: false,
});
