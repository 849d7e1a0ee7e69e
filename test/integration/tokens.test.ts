import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { TokenListSchema, TokenCreatedSchema, validate } from '../../services/contract';
import { issueToken } from '../../services/platform/access-token';
import { eventually } from '../support/eventually';
import { issueSessionToken, seedAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { stack } from '../support/stack';

const run = promisify(execFile);

describe('personal access tokens: create, list, revoke, and what a refused token is told', () => {
  let service: TestService;
  /** A device-login session of the seeded user: what `svc` holds after `svc login`. */
  let session: string;
  const issued: string[] = [];

  beforeAll(async () => {
    service = await startTestService({ env: { TOKEN_USAGE_FLUSH_SECONDS: '1' } });
    session = await issueSessionToken(service.prisma, service.account);
    issued.push(session, service.account.token);
  });

  afterAll(async () => {
    await service?.close();
  });

  const call = (method: string, path: string, token: string, body?: unknown) =>
    fetch(`${service.url}${path}`, { method, headers: { ...bearer(token), 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

  it('reads a token row without scopes (NULL, written outside the service) as having none: 403, never 500', async () => {
    const bare = await seedAccount(service.prisma, { slug: 'no-scopes', scopes: [] });
    await service.prisma.$executeRawUnsafe('UPDATE access_tokens SET scopes = NULL WHERE id = $1::uuid', bare.tokenId);
    expect((await call('GET', '/v1/me', bare.token)).status).toBe(200);
    const refused = await call('GET', '/v1/runs', bare.token);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe('insufficient_scope');
  });

  it('creates a token whose value is answered once, lists it without the value, and refuses it on the very next request after revocation', async () => {
    const created = await call('POST', '/v1/tokens', session, { name: 'ci deploys', scopes: ['run'], expiresInDays: 30 });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const body = (await created.json()) as { id: string; token: string; prefix: string; expiresAt: string; scopes: string[] };
    expect(validate(TokenCreatedSchema, body).ok).toBe(true);
    issued.push(body.token);
    expect(body.token.startsWith('svc_')).toBe(true);
    expect(body.token.startsWith(body.prefix)).toBe(true);
    expect(new Date(body.expiresAt).getTime()).toBeGreaterThan(Date.now() + 29 * 86_400_000);

    // It works, for what its scopes allow.
    expect((await call('GET', '/v1/runs', body.token)).status).toBe(200);
    const readOnly = await fetch(`${service.url}/v1/workflows/acme%2Fflow`, { headers: bearer(body.token) });
    expect(readOnly.status).toBe(403);

    const listed = await call('GET', '/v1/tokens', session);
    const list = (await listed.json()) as { tokens: { id: string; name: string; prefix: string }[] };
    expect(validate(TokenListSchema, list).ok).toBe(true);
    expect(list.tokens.find((t) => t.id === body.id)).toMatchObject({ name: 'ci deploys', prefix: body.prefix });
    expect(JSON.stringify(list)).not.toContain(body.token);

    expect((await call('DELETE', `/v1/tokens/${body.id}`, session)).status).toBe(204);
    const refused = await call('GET', '/v1/runs', body.token);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: string }).error).toContain('was revoked at');
    expect((await call('DELETE', `/v1/tokens/${body.id}`, session)).status).toBe(404);
    const after = (await (await call('GET', '/v1/tokens', session)).json()) as { tokens: { id: string }[] };
    expect(after.tokens.some((t) => t.id === body.id)).toBe(false);
  });

  it('refuses an expiry beyond 365 days, unknown scopes and unknown fields with 400 saying what to fix', async () => {
    const long = await call('POST', '/v1/tokens', session, { name: 'forever', scopes: ['read'], expiresInDays: 366 });
    expect(long.status).toBe(400);
    expect(((await long.json()) as { error: string }).error).toContain('expiresInDays must be <= 365');
    const scopes = await call('POST', '/v1/tokens', session, { name: 'x', scopes: ['admin'] });
    expect(scopes.status).toBe(400);
    expect(((await scopes.json()) as { error: string }).error).toMatch(/scopes.*"read".*"run"/);
    const unknown = await call('POST', '/v1/tokens', session, { name: 'x', scopes: ['read'], owner: 'me' });
    expect(unknown.status).toBe(400);
    const empty = await call('POST', '/v1/tokens', session, { name: '   ', scopes: ['read'] });
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { error: string }).error).toContain('name must not be blank');
  });

  it('lets only a signed-in person mint or revoke tokens, never a personal access token', async () => {
    const minted = await call('POST', '/v1/tokens', service.account.token, { name: 'more', scopes: ['read'] });
    expect(minted.status).toBe(403);
    expect(((await minted.json()) as { error: string }).error).toContain('personal access token');
    // Listing is harmless and allowed.
    expect((await call('GET', '/v1/tokens', service.account.token)).status).toBe(200);
  });

  it('does not let one user revoke another user’s token', async () => {
    const other = await seedAccount(service.prisma, { slug: 'other', scopes: ['read'] });
    issued.push(other.token);
    expect((await call('DELETE', `/v1/tokens/${other.tokenId}`, session)).status).toBe(404);
    expect((await call('GET', '/v1/nodes', other.token)).status).toBe(200);
  });

  it('answers 401 with its own message for a malformed, unknown, expired and revoked token', async () => {
    const messageOf = async (token: string) => ((await (await call('GET', '/v1/runs', token)).json()) as { error: string }).error;
    const good = service.account.token;
    expect(await messageOf(`${good.slice(0, -1)}${good.endsWith('A') ? 'B' : 'A'}`)).toContain('checksum does not match');
    expect(await messageOf(good.slice(0, -3))).toContain('wrong length');
    expect(await messageOf('ghp_notours')).toContain('does not start with a known token prefix');
    expect(await messageOf(issueToken('personal').value)).toContain('is not known');
    const expired = await seedAccount(service.prisma, { slug: 'expired', scopes: ['run'], expiresAt: new Date(Date.now() - 1000) });
    expect(await messageOf(expired.token)).toContain('expired at');
    const revoked = await seedAccount(service.prisma, { slug: 'revoked', scopes: ['run'], revokedAt: new Date() });
    expect(await messageOf(revoked.token)).toContain('was revoked at');
    issued.push(expired.token, revoked.token);
  });

  it('records when a token was last used, without a write per request', async () => {
    const before = await service.prisma.accessToken.findUniqueOrThrow({ where: { id: service.account.tokenId! } });
    for (let i = 0; i < 5; i++) expect((await call('GET', '/v1/runs', service.account.token)).status).toBe(200);
    const after = await eventually(async () => {
      const row = await service.prisma.accessToken.findUniqueOrThrow({ where: { id: service.account.tokenId! } });
      return row.lastUsedAt !== null && (before.lastUsedAt === null || row.lastUsedAt > before.lastUsedAt) ? row : undefined;
    }, { timeoutMs: 10_000, intervalMs: 100, what: 'last_used_at to be written' });
    expect(after.lastUsedAt!.getTime()).toBeLessThanOrEqual(Date.now());
    const listed = (await (await call('GET', '/v1/tokens', session)).json()) as { tokens: { id: string; lastUsedAt: string | null }[] };
    expect(listed.tokens.find((t) => t.id === service.account.tokenId)!.lastUsedAt).not.toBeNull();
  });

  it('leaves no token secret in a dump of the database', async () => {
    const { postgres } = stack();
    const { stdout } = await run('pg_dump', ['--data-only', '-h', postgres.host, '-p', String(postgres.port), '-U', postgres.user, service.db.name], { maxBuffer: 64 * 1024 * 1024 });
    expect(stdout).toContain('access_tokens');
    expect(issued.length).toBeGreaterThan(4);
    for (const token of issued) {
      expect(stdout).not.toContain(token);
      // Nor the random part alone.
      expect(stdout).not.toContain(token.slice(token.indexOf('_') + 1, token.indexOf('_') + 30));
    }
  });
});
