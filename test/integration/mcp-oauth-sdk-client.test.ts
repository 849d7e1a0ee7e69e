import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { createPasswordUser } from '../support/browser-session';
import { FormBrowser } from '../support/form-browser';
import { toolJson } from '../support/mcp-client';
import { bearer, startTestService, type TestService } from '../support/service';

const REDIRECT = 'http://127.0.0.1:9/sdk-callback';

/** The MCP SDK client's OAuth storage, in memory, as a desktop client keeps it on disk. */
class MemoryProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  /** Where the SDK sent the person; the test's browser goes there. */
  authorizationUrl: URL | undefined;

  get redirectUrl(): string {
    return REDIRECT;
  }

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'SDK test client', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.client;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.client = info;
  }

  tokens(): OAuthTokens | undefined {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }

  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }
}

describe("the MCP SDK client's own OAuth support against the hosted MCP server", () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  it('discovers from the 401, registers, sends the person to the consent screen, exchanges the code, calls tools, and refreshes', async () => {
    const provider = new MemoryProvider();
    const mcpUrl = new URL(`${service.url}/mcp`);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await expect(new Client({ name: 'sdk-oauth-test', version: '1.0.0' }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.client).toMatchObject({ client_name: 'SDK test client', token_endpoint_auth_method: 'none' });
    const asked = provider.authorizationUrl!;
    expect(`${asked.origin}${asked.pathname}`).toBe(`${service.url}/oauth/mcp/authorize`);
    expect(Object.fromEntries(asked.searchParams)).toMatchObject({ code_challenge_method: 'S256', scope: 'read run', resource: `${service.url}/mcp`, redirect_uri: REDIRECT });

    // The person, in a browser: signs in, allows.
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const browser = new FormBrowser(service.url);
    await browser.signIn(user.email, user.password);
    const consent = await browser.get(asked.href);
    expect(consent.status).toBe(200);
    const described = await browser.get(`/oauth/mcp/authorize/request${asked.search}`);
    expect(JSON.parse(described.html)).toMatchObject({ client: { name: 'SDK test client' } });
    const approved = await browser.post('/oauth/mcp/authorize', { ...Object.fromEntries(asked.searchParams), action: 'approve' });
    const code = new URL(approved.location!).searchParams.get('code')!;

    await first.finishAuth(code);
    expect(provider.saved).toMatchObject({ access_token: expect.stringMatching(/^svco_/), refresh_token: expect.stringMatching(/^svcr_/), scope: 'read run' });

    const client = new Client({ name: 'sdk-oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    try {
      expect(toolJson(await client.callTool({ name: 'nodes_get', arguments: { id: 'math-add' } })).id).toBe('math-add');
    } finally {
      await client.close();
    }

    // The access token expires; the SDK refreshes with the refresh token on the next 401.
    const before = provider.saved!;
    const me = (await (await fetch(`${service.url}/v1/me`, { headers: bearer(before.access_token) })).json()) as { token: { id: string } };
    await service.prisma.accessToken.update({ where: { id: me.token.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const again = new Client({ name: 'sdk-oauth-test', version: '1.0.0' });
    await again.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    try {
      expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
      expect(toolJson(await again.callTool({ name: 'nodes_get', arguments: { id: 'math-add' } })).id).toBe('math-add');
    } finally {
      await again.close();
    }
  });
});
