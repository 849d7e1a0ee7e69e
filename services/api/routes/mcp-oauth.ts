import type { Router } from 'express';
import type { Logger } from 'pino';
import type { Config } from '../../platform/config';
import type { RateLimiter } from '../../queue';
import type { OAuthRepository, TokenRepository } from '../../store';
import type { TokenLookup } from '../auth/auth-context';
import type { SessionMemberships, SessionOrganizations } from '../auth/browser-sessions';
import { createMcpAuthorizePageRouter } from './mcp-authorize-page-routes';
import { createMcpOAuthProvider } from './mcp-oauth-provider';
import { createMcpOAuthRouter, mcpOAuthUrls } from './mcp-oauth-routes';
import { sendStudioPage } from './studio-routes';

export { mcpOAuthUrls, type McpOAuthUrls } from './mcp-oauth-routes';

export interface McpOAuthDeps {
  config: Pick<Config, 'publicBaseUrl' | 'mcpAccessTokenTtlSeconds' | 'mcpRefreshTokenTtlDays' | 'mcpAuthorizationCodeTtlSeconds' | 'mcpClientRegistrationsPerIpPerHour'>;
  oauth: OAuthRepository;
  /** The service's token lookup (notes usage) and revocation. */
  tokens: TokenLookup & Pick<TokenRepository, 'revoke'>;
  memberships: SessionMemberships;
  organizations: Pick<SessionOrganizations, 'findById'>;
  limiter: Pick<RateLimiter, 'hit'>;
  log: Logger;
  /** The built studio, whose page the authorization endpoint answers with (`Config.studioDir`). */
  studioDir: string;
}

/**
 * The OAuth authorization server of the hosted MCP server (docs/auth.md, "OAuth for MCP
 * clients"): the metadata documents, registration, token and revocation endpoints, and the
 * authorization page, all over one provider.
 */
export function createMcpOAuthRouters(deps: McpOAuthDeps): Router[] {
  const { config } = deps;
  const urls = mcpOAuthUrls(config.publicBaseUrl);
  const provider = createMcpOAuthProvider({
    oauth: deps.oauth,
    tokens: deps.tokens,
    resource: urls.resource,
    authorizationEndpoint: urls.authorize,
    accessTokenTtlSeconds: config.mcpAccessTokenTtlSeconds,
    refreshTokenTtlDays: config.mcpRefreshTokenTtlDays,
  });
  return [
    createMcpOAuthRouter({ provider, urls, limiter: deps.limiter, registrationsPerIp: { limit: config.mcpClientRegistrationsPerIpPerHour, windowMs: 3_600_000 } }),
    createMcpAuthorizePageRouter({
      tokens: deps.tokens,
      memberships: deps.memberships,
      organizations: deps.organizations,
      oauth: deps.oauth,
      studioPage: (res, options) => sendStudioPage(res, deps.studioDir, options),
      resource: urls.resource,
      codeTtlSeconds: config.mcpAuthorizationCodeTtlSeconds,
      accessTokenTtlSeconds: config.mcpAccessTokenTtlSeconds,
      refreshTokenTtlDays: config.mcpRefreshTokenTtlDays,
      log: deps.log,
    }),
  ];
}
