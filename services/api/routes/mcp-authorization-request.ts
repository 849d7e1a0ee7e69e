import type { Scope } from '../../contract';

/**
 * The authorization request of the MCP authorization server (RFC 6749 §4.1.1 with PKCE, RFC
 * 7636, and resource indicators, RFC 8707), read the same way from the page's query (GET) and
 * from the hidden fields its forms post back: the page decides nothing a form field could forge,
 * every post is checked again here.
 *
 * Problems come in the two kinds RFC 6749 §4.1.2.1 separates: with an unknown client or a
 * redirect URI that is not registered exactly, nothing may be sent to that URI (the page shows
 * the problem); every other problem goes back to the client at its redirect URI as `error`.
 */

export const MCP_SCOPES: readonly Scope[] = ['read', 'run'];

/** The parameters the request carries through the page's forms. */
export const REQUEST_FIELDS = ['response_type', 'client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'resource'] as const;

/** A client as the authorization page needs it. */
export interface AuthorizingClient {
  id: string;
  name: string;
  redirectUris: readonly string[];
}

export interface AuthorizationRequest {
  client: AuthorizingClient;
  redirectUri: string;
  scopes: Scope[];
  state: string | undefined;
  codeChallenge: string;
  resource: string;
  /** The request's own parameters, to carry through the page's forms. */
  fields: Record<string, string>;
}

export type RequestCheck =
  | { ok: true; request: AuthorizationRequest }
  /** Shown on the page: no redirect URI to send it to. */
  | { ok: false; redirect: null; message: string }
  /** Sent to the client's redirect URI. */
  | { ok: false; redirect: string; error: string; description: string; state: string | undefined };

const MAX_FIELD_LENGTH = 2048;
/** RFC 7636 §4.2: an S256 challenge is the base64url SHA-256 of the verifier, 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** The URL a decision (or a refusal) goes back to: the redirect URI with the answer's parameters. */
export function redirectWith(redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  return url.href;
}

/**
 * Checks an authorization request. `findClient` looks a registered client up; `resource` is the
 * only protected resource (`$PUBLIC_BASE_URL/mcp`).
 */
export async function checkAuthorizationRequest(
  source: Record<string, unknown>,
  findClient: (id: string) => Promise<AuthorizingClient | null>,
  resource: string,
): Promise<RequestCheck> {
  const fields: Record<string, string> = {};
  for (const name of REQUEST_FIELDS) {
    const value = source[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') return { ok: false, redirect: null, message: `The parameter "${name}" is given more than once; the application must send each parameter once.` };
    if (value.length > MAX_FIELD_LENGTH) return { ok: false, redirect: null, message: `The parameter "${name}" is longer than ${MAX_FIELD_LENGTH} characters.` };
    fields[name] = value;
  }
  const clientId = fields.client_id ?? '';
  if (clientId === '') return { ok: false, redirect: null, message: 'The application sent no client_id: it must register first (dynamic client registration) and send the client_id it got.' };
  const client = await findClient(clientId);
  if (!client) return { ok: false, redirect: null, message: `No application is registered with the client_id "${clientId}"; it must register again.` };
  const redirectUri = fields.redirect_uri ?? '';
  if (redirectUri === '') return { ok: false, redirect: null, message: 'The application sent no redirect_uri; it must send one of the redirect URIs it registered.' };
  // Exactly one of the registered strings: no prefix, port or case relaxation.
  if (!client.redirectUris.includes(redirectUri)) {
    return { ok: false, redirect: null, message: `The redirect_uri "${redirectUri}" is not one the application registered; it must send a registered one exactly.` };
  }

  const state = fields.state;
  const refuse = (error: string, description: string): RequestCheck => ({ ok: false, redirect: redirectUri, error, description, state });
  if (fields.response_type !== 'code') {
    return refuse('unsupported_response_type', `response_type must be "code" (the authorization code flow), not ${JSON.stringify(fields.response_type ?? '')}`);
  }
  const method = fields.code_challenge_method;
  if (method === undefined) return refuse('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256');
  if (method !== 'S256') return refuse('invalid_request', `code_challenge_method must be S256; "${method.slice(0, 20)}" is refused (plain PKCE protects nothing a stolen code does not reveal)`);
  const challenge = fields.code_challenge ?? '';
  if (!S256_CHALLENGE.test(challenge)) return refuse('invalid_request', 'code_challenge must be the base64url SHA-256 of the code verifier: 43 characters of A-Z, a-z, 0-9, "-" and "_"');

  const requested = (fields.scope ?? '').split(' ').filter((s) => s !== '');
  const unknown = requested.filter((s) => !(MCP_SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) return refuse('invalid_scope', `unknown scope ${unknown.map((s) => `"${s.slice(0, 40)}"`).join(', ')}; the scopes are "read" and "run", separated by a space`);
  // No scope asked for: everything the server has (RFC 6749 §3.3 lets the server pick a default).
  const scopes = requested.length === 0 ? [...MCP_SCOPES] : MCP_SCOPES.filter((s) => requested.includes(s));

  if (fields.resource !== undefined && fields.resource !== resource) {
    return refuse('invalid_target', `resource must be ${resource} (the MCP server), not ${JSON.stringify(fields.resource.slice(0, 200))}`);
  }
  return { ok: true, request: { client, redirectUri, scopes, state, codeChallenge: challenge, resource, fields } };
}
