import { randomUUID } from 'node:crypto';
import type { Response } from 'express';
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import {
  InvalidClientMetadataError,
  InvalidGrantError,
  InvalidRequestError,
  InvalidScopeError,
  InvalidTargetError,
  OAuthError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { OAuthClientInformationFull, OAuthTokenRevocationRequest, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { hashToken, issueRefreshToken, issueToken, parseRefreshToken, parseToken } from '../../platform/access-token';
import type { IssuedGrantTokens, OAuthClientRecord, OAuthRepository, TokenRepository } from '../../store';
import type { TokenLookup } from '../auth/auth-context';
import { authenticateBearer } from '../auth/authenticate';
import { MCP_SCOPES } from './mcp-authorization-request';

/** RFC 7591 §3.2.2's error for a redirect URI the server will not register. */
class InvalidRedirectUriError extends OAuthError {
  static override errorCode = 'invalid_redirect_uri';
}

export interface McpOAuthProviderDeps {
  oauth: Pick<OAuthRepository, 'createClient' | 'findClient' | 'findCode' | 'exchangeCode' | 'refresh' | 'revokeGrant' | 'findGrantByRefreshHash' | 'clientOfAccessToken'>;
  tokens: TokenLookup & Pick<TokenRepository, 'revoke'>;
  /** `$PUBLIC_BASE_URL/mcp`: the one protected resource. */
  resource: string;
  /** The authorization page, where `authorize` sends a person. */
  authorizationEndpoint: string;
  accessTokenTtlSeconds: number;
  refreshTokenTtlDays: number;
  clock?: () => Date;
}

const MAX_REDIRECT_URIS = 10;
const MAX_URI_LENGTH = 2000;
const MAX_NAME_LENGTH = 100;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RESTART = 'start the authorization again';

/** Why a redirect URI cannot be registered, or null: https anywhere, http only on a loopback address (RFC 8252 §7.3). */
function redirectUriProblem(uri: string): string | null {
  if (uri.length > MAX_URI_LENGTH) return `a redirect URI is longer than ${MAX_URI_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${JSON.stringify(uri.slice(0, 100))} is not an absolute URL`;
  }
  if (url.hash !== '' || uri.includes('#')) return `${uri} has a fragment; redirect URIs must not (RFC 6749 §3.1.2)`;
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return null;
  return `${uri} is refused: redirect URIs must use https, or http on a loopback address (http://127.0.0.1:<port>/..., http://localhost:<port>/...)`;
}

function clientInformation(client: OAuthClientRecord): OAuthClientInformationFull {
  return { ...(client.metadata as Partial<OAuthClientInformationFull>), redirect_uris: client.redirectUris, client_id: client.id, client_id_issued_at: Math.floor(client.createdAt.getTime() / 1000) };
}

/**
 * The MCP authorization server over our users, sessions and tokens, in the shape of the MCP SDK's
 * `OAuthServerProvider`, so the SDK's token, registration and revocation handlers serve it.
 * Every client is public (`token_endpoint_auth_method: none`): a desktop MCP client cannot keep a
 * secret, and PKCE binds each code to the client that asked for it; so no client secret is ever
 * stored. Access tokens are `oauth` rows of `access_tokens` (`svco_…`), which the API's bearer
 * authentication accepts on every route; refresh tokens (`svcr_…`) and codes are stored hashed.
 */
export function createMcpOAuthProvider(deps: McpOAuthProviderDeps): OAuthServerProvider {
  const clock = deps.clock ?? (() => new Date());

  const clientsStore: OAuthRegisteredClientsStore = {
    async getClient(clientId) {
      if (!UUID.test(clientId)) return undefined;
      const client = await deps.oauth.findClient(clientId);
      return client ? clientInformation(client) : undefined;
    },
    async registerClient(requested) {
      const uris = requested.redirect_uris;
      if (uris.length === 0) throw new InvalidRedirectUriError('redirect_uris must list at least one redirect URI');
      if (uris.length > MAX_REDIRECT_URIS) throw new InvalidRedirectUriError(`redirect_uris may list at most ${MAX_REDIRECT_URIS} URIs`);
      for (const uri of uris) {
        const problem = redirectUriProblem(uri);
        if (problem) throw new InvalidRedirectUriError(problem);
      }
      const name = (requested.client_name ?? '').trim();
      if (name.length > MAX_NAME_LENGTH) throw new InvalidClientMetadataError(`client_name must be at most ${MAX_NAME_LENGTH} characters`);
      const grants = requested.grant_types ?? ['authorization_code', 'refresh_token'];
      const unsupported = grants.filter((g) => g !== 'authorization_code' && g !== 'refresh_token');
      if (unsupported.length > 0) throw new InvalidClientMetadataError(`grant_types may only hold authorization_code and refresh_token, not ${unsupported.join(', ')}`);
      if (requested.response_types && requested.response_types.some((t) => t !== 'code')) throw new InvalidClientMetadataError('response_types may only hold "code"');
      // RFC 7591 §3.2.1 lets the server replace what it does not support: no secret, PKCE instead.
      const { client_secret: _secret, client_secret_expires_at: _expiry, ...metadata } = requested;
      const answered = {
        ...metadata,
        client_name: name || undefined,
        redirect_uris: [...uris],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        scope: MCP_SCOPES.join(' '),
      };
      const stored = await deps.oauth.createClient({ id: randomUUID(), name: name || 'Unnamed MCP client', redirectUris: uris, metadata: answered });
      return clientInformation(stored);
    },
  };

  function tokenResponse(issued: IssuedGrantTokens, refreshValue: string, accessValue: string): OAuthTokens {
    return { access_token: accessValue, token_type: 'Bearer', expires_in: deps.accessTokenTtlSeconds, scope: issued.accessToken.scopes.join(' '), refresh_token: refreshValue };
  }

  function newTokens(clientName: string) {
    const now = clock();
    const access = issueToken('oauth');
    const refresh = issueRefreshToken();
    return {
      now,
      access,
      refresh,
      stored: {
        refreshHash: refresh.hash,
        refreshExpiresAt: new Date(now.getTime() + deps.refreshTokenTtlDays * 86_400_000),
        access: { name: `MCP client (${clientName})`, hash: access.hash, displayPrefix: access.displayPrefix, expiresAt: new Date(now.getTime() + deps.accessTokenTtlSeconds * 1000) },
      },
    };
  }

  /** The client's unexpired code, or why not; a code exchanged before takes its grant down with it. */
  async function liveCode(client: OAuthClientInformationFull, code: string) {
    const found = await deps.oauth.findCode(hashToken(code));
    if (!found || found.clientId !== client.client_id) throw new InvalidGrantError(`the authorization code is not known to this client_id; ${RESTART}`);
    if (found.consumedAt !== null) {
      if (found.grantId) await deps.oauth.revokeGrant(found.grantId, clock());
      throw new InvalidGrantError(`the authorization code was already exchanged (a code is single use; the tokens it gave are now revoked); ${RESTART}`);
    }
    if (found.expiresAt.getTime() <= clock().getTime()) throw new InvalidGrantError(`the authorization code expired at ${found.expiresAt.toISOString()}; ${RESTART}`);
    return found;
  }

  return {
    get clientsStore() {
      return clientsStore;
    },

    // The SDK's authorization handler is not mounted (see mcp-oauth-routes.ts); anything calling
    // this is sent to the authorization page, which checks the request itself.
    async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response): Promise<void> {
      const url = new URL(deps.authorizationEndpoint);
      const query: Record<string, string | undefined> = {
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: params.redirectUri,
        code_challenge: params.codeChallenge,
        code_challenge_method: 'S256',
        scope: params.scopes?.join(' ') || undefined,
        state: params.state,
        resource: params.resource?.href,
      };
      for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, v);
      res.redirect(302, url.href);
    },

    async challengeForAuthorizationCode(client, code) {
      return (await liveCode(client, code)).codeChallenge;
    },

    async exchangeAuthorizationCode(client, code, _verifier, redirectUri, resource): Promise<OAuthTokens> {
      const found = await liveCode(client, code);
      if (redirectUri === undefined) throw new InvalidRequestError('the parameter "redirect_uri" is required: send the redirect_uri of the authorization request');
      if (redirectUri !== found.redirectUri) throw new InvalidGrantError('redirect_uri does not match the one of the authorization request; send it exactly as sent there');
      if (resource !== undefined && resource.href !== found.resource && resource.href !== `${found.resource}/`) {
        throw new InvalidTargetError(`resource must be ${found.resource}, the one the code was issued for`);
      }
      const tokens = newTokens(client.client_name ?? client.client_id);
      const outcome = await deps.oauth.exchangeCode(hashToken(code), tokens.now, tokens.stored);
      if (!outcome.ok) {
        const why = { unknown: 'is not known', used: 'was already exchanged (a code is single use)', expired: 'expired' }[outcome.reason];
        throw new InvalidGrantError(`the authorization code ${why}; ${RESTART}`);
      }
      return tokenResponse(outcome.issued, tokens.refresh.value, tokens.access.value);
    },

    async exchangeRefreshToken(client, refreshToken, scopes, resource): Promise<OAuthTokens> {
      const parsed = parseRefreshToken(refreshToken);
      if (!parsed.ok) throw new InvalidGrantError('refresh_token is not a refresh token of this server (svcr_…); send the refresh_token of the last token response');
      if (resource !== undefined && resource.href !== deps.resource && resource.href !== `${deps.resource}/`) throw new InvalidTargetError(`resource must be ${deps.resource}`);
      if (scopes) {
        const current = await deps.oauth.findGrantByRefreshHash(parsed.hash, { kind: 'mcp', id: client.client_id });
        const granted: readonly string[] = current?.scopes ?? MCP_SCOPES;
        const extra = scopes.filter((s) => !granted.includes(s));
        if (extra.length > 0) throw new InvalidScopeError(`a refresh cannot add scopes: ${extra.join(', ')} ${extra.length === 1 ? 'was' : 'were'} not granted; ask for a subset of "${granted.join(' ')}"`);
      }
      const tokens = newTokens(client.client_name ?? client.client_id);
      const next = issueRefreshToken();
      const outcome = await deps.oauth.refresh(parsed.hash, { kind: 'mcp', id: client.client_id }, tokens.now, {
        newRefreshHash: next.hash,
        refreshExpiresAt: tokens.stored.refreshExpiresAt,
        access: tokens.stored.access,
        scopes,
      });
      if (!outcome.ok) {
        const why = {
          unknown: 'is not known to this client_id',
          replayed: 'was already used (refresh tokens are rotated on every use; the grant is now revoked, as a replay means it leaked)',
          expired: 'expired',
          revoked: 'was revoked',
        }[outcome.reason];
        throw new InvalidGrantError(`the refresh token ${why}; ${RESTART}`);
      }
      return tokenResponse(outcome.issued, next.value, tokens.access.value);
    },

    // An MCP access token ends its whole grant, like revoking it under Settings, API tokens; a
    // refresh token ends its grant. Tokens of other kinds or clients are left alone (RFC 7009
    // §2.2: an unknown token is still answered 200).
    async revokeToken(client: OAuthClientInformationFull, request: OAuthTokenRevocationRequest): Promise<void> {
      const access = parseToken(request.token);
      if (access.ok && access.kind === 'oauth') {
        const record = await deps.tokens.findByHash(access.hash);
        if (record && (await deps.oauth.clientOfAccessToken(record.id)) === client.client_id) await deps.tokens.revoke(record.id, {});
        return;
      }
      const refresh = parseRefreshToken(request.token);
      if (refresh.ok) {
        const grant = await deps.oauth.findGrantByRefreshHash(refresh.hash, { kind: 'mcp', id: client.client_id });
        if (grant) await deps.oauth.revokeGrant(grant.id, clock());
      }
    },

    async verifyAccessToken(token: string): Promise<AuthInfo> {
      const auth = await authenticateBearer(`Bearer ${token}`, deps.tokens, clock());
      const record = await deps.tokens.findByHash(hashToken(token));
      return {
        token,
        clientId: auth.kind === 'oauth' ? ((await deps.oauth.clientOfAccessToken(auth.tokenId)) ?? 'oauth') : auth.kind,
        scopes: [...auth.scopes],
        expiresAt: record?.expiresAt ? Math.floor(record.expiresAt.getTime() / 1000) : undefined,
        resource: new URL(deps.resource),
        extra: { auth },
      };
    },
  };
}
