import { createHash, randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createBrowserSession, createPasswordUser } from '../support/browser-session';
import { eventually } from '../support/eventually';
import { FormBrowser } from '../support/form-browser';
import { toolJson, TWO_ADDS } from '../support/mcp-client';
import { bearer, startTestService, type TestService } from '../support/service';

const REDIRECT = 'http://127.0.0.1:9/callback';
const AUTHORIZE = '/oauth/mcp/authorize';

interface Tokens {
  access_token: string;
  refresh_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

describe('OAuth for MCP clients (/oauth/mcp, the well-known metadata)', () => {
  let service: TestService;
  let clientId: string;

  beforeAll(async () => {
    service = await startTestService();
    // Every test's client; the registration test registers another one and looks at it.
    clientId = (await register({ client_name: 'Test MCP client', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' })).body.client_id as string;
  });
  afterAll(async () => {
    await service?.close();
  });

  async function post(path: string, params: Record<string, string>): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
    const res = await fetch(`${service.url}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params).toString(),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
  }

  async function register(metadata: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${service.url}/oauth/mcp/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(metadata) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** The authorization request's parameters: the query of the authorization URL and the consent form's hidden fields. */
  function requestFields(params: Record<string, string>): Record<string, string> {
    return { response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge_method: 'S256', state: 'st-1', ...params };
  }

  function authorizeUrl(params: Record<string, string>): string {
    return `${AUTHORIZE}?${new URLSearchParams(requestFields(params)).toString()}`;
  }

  /**
   * A new member of the seeded organization, signed in as the studio signs in, at the consent page
   * (the studio's index.html, which the endpoint serves once it has checked the request); `fields`
   * are what the page's form posts back.
   */
  async function consentScreen(params: Record<string, string>): Promise<{ browser: FormBrowser; html: string; headers: Headers; fields: Record<string, string> }> {
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const browser = new FormBrowser(service.url);
    await browser.signIn(user.email, user.password);
    const page = await browser.get(authorizeUrl(params));
    expect(page.status).toBe(200);
    expect(page.html).toContain('<div id="root">');
    return { browser, html: page.html, headers: page.headers, fields: requestFields(params) };
  }

  /** The whole authorization: consent approved, the code exchanged. */
  async function authorize(scope = 'read run'): Promise<Tokens> {
    const { verifier, challenge } = pkce();
    const { browser, fields } = await consentScreen({ code_challenge: challenge, scope });
    const approved = await browser.post(AUTHORIZE, { ...fields, action: 'approve' });
    const code = new URL(approved.location!).searchParams.get('code')!;
    const exchanged = await post('/oauth/mcp/token', { grant_type: 'authorization_code', client_id: clientId, code, code_verifier: verifier, redirect_uri: REDIRECT });
    expect(exchanged.status).toBe(200);
    return exchanged.body as unknown as Tokens;
  }

  it('is discoverable: protected-resource metadata, then the authorization server metadata', async () => {
    // The hosted MCP server answers 401 naming the metadata once it is mounted; without it, clients start at the well-known URL.
    const probe = await fetch(`${service.url}/mcp`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    const named = /resource_metadata="([^"]+)"/.exec(probe.headers.get('www-authenticate') ?? '');
    if (probe.status === 401) expect(named).not.toBeNull();
    const prmUrl = named ? named[1]! : `${service.url}/.well-known/oauth-protected-resource/mcp`;
    const prm = (await (await fetch(prmUrl)).json()) as Record<string, unknown>;
    expect(prm).toMatchObject({ resource: `${service.url}/mcp`, authorization_servers: [`${service.url}/oauth/mcp`], scopes_supported: ['read', 'run'] });
    expect(await (await fetch(`${service.url}/.well-known/oauth-protected-resource`)).json()).toEqual(prm);

    const as = (await (await fetch(`${service.url}/.well-known/oauth-authorization-server/oauth/mcp`)).json()) as Record<string, unknown>;
    expect(as).toMatchObject({
      issuer: `${service.url}/oauth/mcp`,
      authorization_endpoint: `${service.url}/oauth/mcp/authorize`,
      token_endpoint: `${service.url}/oauth/mcp/token`,
      registration_endpoint: `${service.url}/oauth/mcp/register`,
      revocation_endpoint: `${service.url}/oauth/mcp/revoke`,
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none'],
    });
    expect(await (await fetch(`${service.url}/.well-known/oauth-authorization-server`)).json()).toEqual(as);
  });

  it('registers clients as public clients, and refuses redirect URIs that are not https or loopback http', async () => {
    const registered = await register({ client_name: 'Test MCP client', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_post' });
    expect(registered.status).toBe(201);
    expect(registered.body).toMatchObject({ client_name: 'Test MCP client', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
    expect(registered.body.client_secret).toBeUndefined();
    expect(registered.body.client_id).toMatch(/^[0-9a-f-]{36}$/);

    const plainHttp = await register({ client_name: 'x', redirect_uris: ['http://example.com/cb'] });
    expect(plainHttp).toMatchObject({ status: 400, body: { error: 'invalid_redirect_uri', error_description: expect.stringContaining('https, or http on a loopback address') } });
    const tooMany = await register({ client_name: 'x', redirect_uris: Array.from({ length: 11 }, (_, i) => `https://example.com/${i}`) });
    expect(tooMany).toMatchObject({ status: 400, body: { error: 'invalid_redirect_uri' } });
    const huge = await fetch(`${service.url}/oauth/mcp/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ client_name: 'x'.repeat(20_000), redirect_uris: [REDIRECT] }) });
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses requests it cannot trust on the page, and sends the others back to the client as errors', async () => {
    const browser = new FormBrowser(service.url);
    const { challenge } = pkce();
    const unregistered = await browser.get(authorizeUrl({ code_challenge: challenge, redirect_uri: 'http://127.0.0.1:10/callback' }));
    expect(unregistered.location).toBeUndefined();
    expect(unregistered.status).toBe(400);
    expect(unregistered.html).toContain('is not one the application registered');
    const prefix = await browser.get(authorizeUrl({ code_challenge: challenge, redirect_uri: `${REDIRECT}/more` }));
    expect(prefix.status).toBe(400);

    const plain = await browser.get(authorizeUrl({ code_challenge: challenge, code_challenge_method: 'plain' }));
    const refused = new URL(plain.location!);
    expect(`${refused.origin}${refused.pathname}`).toBe(REDIRECT);
    expect(Object.fromEntries(refused.searchParams)).toMatchObject({ error: 'invalid_request', error_description: expect.stringContaining('S256'), state: 'st-1' });
    const noPkce = new URL((await browser.get(authorizeUrl({ code_challenge_method: '' }).replace('&code_challenge_method=', ''))).location!);
    expect(noPkce.searchParams.get('error')).toBe('invalid_request');
    const scope = new URL((await browser.get(authorizeUrl({ code_challenge: challenge, scope: 'read admin' }))).location!);
    expect(scope.searchParams.get('error')).toBe('invalid_scope');
  });

  it('signs in, shows the consent screen, approves, and exchanges the code once, with the right verifier and redirect URI', async () => {
    const { verifier, challenge } = pkce();
    const { browser, headers, fields } = await consentScreen({ code_challenge: challenge, scope: 'read run' });
    expect(headers.get('content-type')?.toLowerCase()).toBe('text/html; charset=utf-8');
    expect(headers.get('cache-control')).toBe('no-store');
    expect(headers.get('x-frame-options')).toBe('DENY');
    expect(headers.get('content-security-policy')).toContain("form-action 'self' http://127.0.0.1:9;");
    expect(headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const described = await browser.get(`${AUTHORIZE}/request?${new URLSearchParams(fields).toString()}`);
    expect(described.status).toBe(200);
    expect(described.headers.get('cache-control')).toBe('no-store');
    expect(JSON.parse(described.html)).toEqual({
      client: { id: clientId, name: 'Test MCP client' },
      redirectUri: REDIRECT,
      redirectHost: '127.0.0.1:9',
      scopes: ['read', 'run'],
      fields,
      accessMinutes: 60,
      refreshDays: 30,
    });

    const approved = await browser.post(AUTHORIZE, { ...fields, action: 'approve' });
    expect(approved.status).toBe(303);
    const back = new URL(approved.location!);
    expect(back.searchParams.get('state')).toBe('st-1');
    const code = back.searchParams.get('code')!;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const exchange = (params: Record<string, string>) => post('/oauth/mcp/token', { grant_type: 'authorization_code', client_id: clientId, code, code_verifier: verifier, redirect_uri: REDIRECT, ...params });
    const wrongVerifier = await exchange({ code_verifier: pkce().verifier });
    expect(wrongVerifier).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: expect.stringContaining('code_verifier') } });
    const wrongRedirect = await exchange({ redirect_uri: 'http://127.0.0.1:9/other' });
    expect(wrongRedirect).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: expect.stringContaining('redirect_uri') } });
    const missing = await exchange({ code_verifier: '' });
    expect(missing).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'the parameter "code_verifier" is required for grant_type=authorization_code' } });

    const granted = await exchange({});
    expect(granted.status).toBe(200);
    expect(granted.headers.get('cache-control')).toBe('no-store');
    expect(granted.body).toEqual({ access_token: expect.stringMatching(/^svco_/), refresh_token: expect.stringMatching(/^svcr_/), token_type: 'Bearer', expires_in: 3600, scope: 'read run' });
    const tokens = granted.body as unknown as Tokens;

    const me = await fetch(`${service.url}/v1/me`, { headers: bearer(tokens.access_token) });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ organization: { id: service.account.orgId }, token: { kind: 'oauth', name: 'MCP client (Test MCP client)', scopes: ['read', 'run'] } });
    const listed = (await (await fetch(`${service.url}/v1/tokens`, { headers: bearer(tokens.access_token) })).json()) as { tokens: { kind: string; name: string }[] };
    expect(listed.tokens).toContainEqual(expect.objectContaining({ kind: 'oauth', name: 'MCP client (Test MCP client)' }));
    // Like a personal access token, it cannot mint tokens: a leaked one must not make itself harder to revoke.
    const mint = await fetch(`${service.url}/v1/tokens`, { method: 'POST', headers: { ...bearer(tokens.access_token), 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'x', scopes: ['read'] }) });
    expect(mint.status).toBe(403);

    // Single use: a second exchange is refused and takes down what the first one gave.
    const again = await exchange({});
    expect(again).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: expect.stringContaining('already exchanged') } });
    expect((await fetch(`${service.url}/v1/me`, { headers: bearer(tokens.access_token) })).status).toBe(401);
  });

  it('denies: the client is told access_denied, with its state', async () => {
    const { challenge } = pkce();
    const { browser, fields } = await consentScreen({ code_challenge: challenge });
    const denied = await browser.post(AUTHORIZE, { ...fields, action: 'deny' });
    const back = new URL(denied.location!);
    expect(Object.fromEntries(back.searchParams)).toEqual({ error: 'access_denied', error_description: expect.any(String), state: 'st-1' });
  });

  it('describes a request it cannot use as the JSON error the consent page shows, and a hostile client name as data', async () => {
    const { challenge } = pkce();
    const browser = new FormBrowser(service.url);
    const unregistered = await browser.get(`${AUTHORIZE}/request?${new URLSearchParams(requestFields({ code_challenge: challenge, redirect_uri: 'http://127.0.0.1:10/callback' })).toString()}`);
    expect(unregistered.status).toBe(400);
    expect(JSON.parse(unregistered.html)).toMatchObject({ code: 'validation_failed', error: expect.stringContaining('is not one the application registered') });

    const hostile = await register({ client_name: '<script>alert(1)</script>', redirect_uris: [REDIRECT] });
    const query = new URLSearchParams({ response_type: 'code', client_id: hostile.body.client_id as string, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256' }).toString();
    const described = await browser.get(`${AUTHORIZE}/request?${query}`);
    expect(JSON.parse(described.html)).toMatchObject({ client: { name: '<script>alert(1)</script>' } });
    // The endpoint's own answer is the studio's page, which React renders the name into as text.
    const page = await browser.get(`${AUTHORIZE}?${query}`);
    expect(page.status).toBe(200);
    expect(page.html).not.toContain('alert(1)');
  });

  it("refuses a decision without a session, and one for an organization not the person's, sending nothing to the client", async () => {
    const { challenge } = pkce();
    const { browser, fields } = await consentScreen({ code_challenge: challenge });
    const stranger = await browser.post(AUTHORIZE, { ...fields, action: 'approve', org: 'someone-elses' });
    expect(stranger.status).toBe(403);
    expect(stranger.location).toBeUndefined();
    expect(stranger.html).toContain('You are not a member of an organization &quot;someone-elses&quot;');

    const signedOut = await new FormBrowser(service.url).post(AUTHORIZE, { ...fields, action: 'approve' });
    expect(signedOut.status).toBe(401);
    expect(signedOut.location).toBeUndefined();
    expect(signedOut.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(signedOut.html).toContain('sign in and decide again');
    const unknown = await browser.post(AUTHORIZE, { ...fields, action: 'sign-in' });
    expect(unknown.status).toBe(400);
    expect(unknown.html).toContain('no known action');
  });

  it('refuses cross-origin posts to the page with 403 before reading them', async () => {
    const { challenge } = pkce();
    const { browser, fields } = await consentScreen({ code_challenge: challenge });
    const forged = await browser.post(AUTHORIZE, { ...fields, action: 'approve' }, { Origin: 'https://evil.example', 'Sec-Fetch-Site': 'cross-site' });
    expect(forged.status).toBe(403);
    expect(forged.location).toBeUndefined();
  });

  it('serves the hosted MCP server to the access token: tools run with the granted scopes, a read-only grant gets an error result naming "run"', async () => {
    const connect = async (token: string): Promise<Client> => {
      const client = new Client({ name: 'mcp-oauth-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), { requestInit: { headers: bearer(token) } }));
      return client;
    };
    const full = await connect((await authorize('read run')).access_token);
    try {
      expect(toolJson(await full.callTool({ name: 'nodes_get', arguments: { id: 'math-add' } })).id).toBe('math-add');
      expect(toolJson(await full.callTool({ name: 'runs_create', arguments: { workflow: TWO_ADDS } }))).toEqual({ outputs: { out: { kind: 'float', value: 3 } } });
    } finally {
      await full.close();
    }
    const readOnly = await connect((await authorize('read')).access_token);
    try {
      const refused = await readOnly.callTool({ name: 'runs_create', arguments: { workflow: TWO_ADDS } });
      expect(refused.isError).toBe(true);
      expect(toolJson(refused).error).toMatchObject({ code: 'insufficient_scope', message: expect.stringContaining('"run"') });
    } finally {
      await readOnly.close();
    }
  });

  it('refreshes with rotation: the old refresh token is refused, and replaying it revokes the grant', async () => {
    const first = await authorize();
    const refreshed = await post('/oauth/mcp/token', { grant_type: 'refresh_token', client_id: clientId, refresh_token: first.refresh_token });
    expect(refreshed.status).toBe(200);
    const second = refreshed.body as unknown as Tokens;
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect((await fetch(`${service.url}/v1/me`, { headers: bearer(second.access_token) })).status).toBe(200);

    const replay = await post('/oauth/mcp/token', { grant_type: 'refresh_token', client_id: clientId, refresh_token: first.refresh_token });
    expect(replay).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: expect.stringContaining('already used') } });
    expect((await fetch(`${service.url}/v1/me`, { headers: bearer(second.access_token) })).status).toBe(401);
    const afterReplay = await post('/oauth/mcp/token', { grant_type: 'refresh_token', client_id: clientId, refresh_token: second.refresh_token });
    expect(afterReplay).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });

    const narrower = await authorize('read');
    const wider = await post('/oauth/mcp/token', { grant_type: 'refresh_token', client_id: clientId, refresh_token: narrower.refresh_token, scope: 'read run' });
    expect(wider).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
  });

  it('revokes: an access token is 401 on its next use, a refresh token no longer refreshes', async () => {
    const tokens = await authorize();
    const revoked = await post('/oauth/mcp/revoke', { client_id: clientId, token: tokens.access_token });
    expect(revoked.status).toBe(200);
    const me = await fetch(`${service.url}/v1/me`, { headers: bearer(tokens.access_token) });
    expect(me.status).toBe(401);
    expect(((await me.json()) as { error: string }).error).toContain('was revoked');

    const other = await authorize();
    expect((await post('/oauth/mcp/revoke', { client_id: clientId, token: other.refresh_token })).status).toBe(200);
    expect((await post('/oauth/mcp/token', { grant_type: 'refresh_token', client_id: clientId, refresh_token: other.refresh_token })).body).toMatchObject({ error: 'invalid_grant' });
    expect((await fetch(`${service.url}/v1/me`, { headers: bearer(other.access_token) })).status).toBe(401);
  });

  it('revoking the access token under Settings, API tokens disconnects the client (its refresh token too)', async () => {
    const tokens = await authorize();
    const me = (await (await fetch(`${service.url}/v1/me`, { headers: bearer(tokens.access_token) })).json()) as { token: { id: string } };
    const row = await service.prisma.accessToken.findUniqueOrThrow({ where: { id: me.token.id } });
    const session = await createBrowserSession(service.prisma, { userId: row.userId, orgId: row.orgId });
    const deleted = await fetch(`${service.url}/v1/tokens/${me.token.id}`, { method: 'DELETE', headers: { Cookie: session.cookie, Origin: new URL(service.url).origin } });
    expect(deleted.status).toBe(204);
    expect((await post('/oauth/mcp/token', { grant_type: 'refresh_token', client_id: clientId, refresh_token: tokens.refresh_token })).body).toMatchObject({ error: 'invalid_grant' });
  });

  it('a read-only grant is refused on run routes with 403 insufficient_scope; an expired access token is 401', async () => {
    const tokens = await authorize('read');
    expect(tokens.scope).toBe('read');
    const run = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(tokens.access_token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow: { nodes: [] } }) });
    expect(run.status).toBe(403);
    expect(await run.json()).toMatchObject({ code: 'insufficient_scope', error: expect.stringContaining('"run"') });
    expect((await fetch(`${service.url}/v1/nodes/core.text`, { headers: bearer(tokens.access_token) })).status).not.toBe(401);

    const me = (await (await fetch(`${service.url}/v1/me`, { headers: bearer(tokens.access_token) })).json()) as { token: { id: string } };
    await service.prisma.accessToken.update({ where: { id: me.token.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    // Changed behind the API's back (SQL), the token reaches its cache by notification, a moment
    // later (docs/auth.md, Token lookups): the next requests are refused from then on.
    const expired = await eventually(
      async () => {
        const res = await fetch(`${service.url}/v1/me`, { headers: bearer(tokens.access_token) });
        return res.status === 401 ? res : (await res.body?.cancel(), undefined);
      },
      { what: 'the expired token to be refused' },
    );
    expect(((await expired.json()) as { error: string }).error).toContain('expired');
  });

  it('stores only hashes of codes, refresh tokens and access tokens', async () => {
    const tokens = await authorize();
    const dump = JSON.stringify([
      await service.prisma.accessToken.findMany(),
      await service.prisma.oAuthGrant.findMany(),
      await service.prisma.oAuthAuthorizationCode.findMany(),
    ]);
    expect(dump).not.toContain(tokens.access_token);
    expect(dump).not.toContain(tokens.refresh_token);
    expect(dump).toContain(createHash('sha256').update(tokens.refresh_token).digest('hex'));
  });
});
