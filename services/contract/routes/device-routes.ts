import { Type } from '@sinclair/typebox';
import { defineOperation } from '../operation';
import { strictObject } from '../schemas/strict-object';

/**
 * The approving person's side of device login (the web editor's `/device` page, and `svc`):
 * look up a user code, approve it for one of their organizations, or deny it. Approving issues a
 * credential, so, as for minting tokens, a personal access token may not (docs/auth.md). The
 * device's own side (`/oauth/device/code`, `/oauth/token`) speaks RFC 8628's formats and is not
 * declared here.
 */
const APPROVERS = ['browser', 'session'] as const;

const UserCodeSchema = Type.String({ minLength: 1, maxLength: 32, description: 'The code shown by the CLI, e.g. BCDF-GHJK (case, dashes and spaces do not matter)' });

/** A pending login request as the approver sees it. */
const DeviceRequestSchema = Type.Object({
  user_code: Type.String(),
  client_id: Type.String(),
  scopes: Type.Array(Type.String()),
  expires_at: Type.String({ format: 'date-time' }),
});

const ERRORS = ['validation_failed', 'unauthorized', 'forbidden', 'not_found', 'gone', 'conflict', 'rate_limited'] as const;

const approver = {
  scope: null,
  kinds: APPROVERS,
  auth: 'required',
  response: 'json',
  spendsMoney: false,
} as const;

export const deviceLookup = defineOperation({
  ...approver,
  name: 'device.lookup',
  mcpTool: 'device_lookup',
  summary: 'Show the login request a user code names',
  http: { method: 'GET', path: '/oauth/device/lookup', pathParams: [], noStore: true },
  input: strictObject({ user_code: UserCodeSchema }),
  output: DeviceRequestSchema,
  errors: ERRORS,
  readOnly: true,
});

export const deviceApprove = defineOperation({
  ...approver,
  name: 'device.approve',
  mcpTool: 'device_approve',
  summary: 'Approve a login request for one of your organizations',
  http: { method: 'POST', path: '/oauth/device/approve', pathParams: [] },
  input: strictObject({
    user_code: UserCodeSchema,
    org: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Slug of the organization the session acts for; default the one of your sign-in' })),
  }),
  output: Type.Object({
    status: Type.Literal('approved'),
    ...DeviceRequestSchema.properties,
    organization: Type.Object({ id: Type.String({ format: 'uuid' }), slug: Type.String(), name: Type.String() }),
  }),
  errors: [...ERRORS, 'insufficient_scope'],
  readOnly: false,
});

export const deviceDeny = defineOperation({
  ...approver,
  name: 'device.deny',
  mcpTool: 'device_deny',
  summary: 'Deny a login request',
  http: { method: 'POST', path: '/oauth/device/deny', pathParams: [] },
  input: strictObject({ user_code: UserCodeSchema }),
  output: Type.Object({ status: Type.Literal('denied'), ...DeviceRequestSchema.properties }),
  errors: ERRORS,
  readOnly: false,
});
