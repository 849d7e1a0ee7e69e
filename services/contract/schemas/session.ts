import { Type, type Static } from '@sinclair/typebox';
import { strictObject } from './strict-object';

/** `POST /auth/sign-in`: the web editor's password sign-in. */
export const SignInInputSchema = strictObject({
  email: Type.String({ minLength: 3, maxLength: 320, description: 'The account email (case-insensitive)' }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
  org: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Slug of the organization to act in; default: the first one joined' })),
});
export type SignInInput = Static<typeof SignInInputSchema>;

/** `POST /auth/switch`: move the browser session to another organization the user belongs to. */
export const SwitchOrgInputSchema = strictObject({
  org: Type.String({ minLength: 1, maxLength: 64, description: 'Slug of the organization to act in' }),
});
export type SwitchOrgInput = Static<typeof SwitchOrgInputSchema>;

/** A member's role in an organization. */
export const ORG_ROLES = ['owner', 'admin', 'member'] as const;
export type OrgRole = (typeof ORG_ROLES)[number];
export const OrgRoleSchema = Type.Union(ORG_ROLES.map((r) => Type.Literal(r)), { description: "The user's role in the organization" });

const OrgHead = {
  id: Type.String({ format: 'uuid' }),
  slug: Type.String(),
  name: Type.String(),
  role: OrgRoleSchema,
};

/** Who a web editor session acts for: the answer to sign-in, `POST /auth/switch` and `GET /auth/session`. */
export const SessionBodySchema = Type.Object({
  user: Type.Object({ id: Type.String({ format: 'uuid' }), email: Type.String(), name: Type.String() }),
  organization: Type.Object({
    ...OrgHead,
    balanceUsd: Type.Number({ description: "The organization's available balance in USD, as a 402 reports it" }),
  }),
  /** Every organization the user belongs to (the session acts in `organization`). */
  organizations: Type.Array(Type.Object(OrgHead)),
  /** When the session ends unless signed out before. */
  expiresAt: Type.String({ format: 'date-time' }),
});
export type SessionBody = Static<typeof SessionBodySchema>;

/**
 * `GET /oauth/mcp/authorize/request`: what the studio's consent page shows of an MCP client's
 * authorization request once the server has checked it (docs/mcp.md, The consent page).
 */
export const ConsentRequestBodySchema = Type.Object({
  client: Type.Object({ id: Type.String(), name: Type.String() }),
  redirectUri: Type.String(),
  /** The redirect URI's host (and port): where the answer goes, as a person can judge it. */
  redirectHost: Type.String(),
  scopes: Type.Array(Type.String()),
  /** The request's own parameters, posted back with the decision as hidden fields. */
  fields: Type.Record(Type.String(), Type.String()),
  accessMinutes: Type.Integer(),
  refreshDays: Type.Integer(),
});
export type ConsentRequestBody = Static<typeof ConsentRequestBodySchema>;
