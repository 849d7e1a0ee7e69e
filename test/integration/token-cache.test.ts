import pg from 'pg';
import { listen, type RunningServer } from '../../services/api';
import { eventually } from '../support/eventually';
import { issueSessionToken, seedAccount, type SeededAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';

/**
 * The API's token cache (docs/auth.md, "Token lookups"): a known token costs no database read,
 * and every change of a token, made by any process on any path, reaches every API process's
 * cache through Postgres' notifications; while those may be missed, nothing is served from it.
 */
describe('token lookups cached per API process, every change heard', () => {
  let service: TestService;
  /** A second API process on the same database: another replica. */
  let replica: { url: string; server: RunningServer; close(): Promise<void> };
  /** A connection of its own, as another process' writes would be. */
  let outside: pg.Client;

  beforeAll(async () => {
    service = await startTestService({ env: { TOKEN_CACHE_SECONDS: '3600' } });
    const runtime = await service.extra({ ROLE: 'api', PORT: '0' });
    const server = await listen(runtime.app!, '127.0.0.1', 0);
    replica = { url: server.url, server, close: () => server.close(0) };
    outside = new pg.Client({ connectionString: service.db.url });
    await outside.connect();
  });

  afterAll(async () => {
    await outside?.end();
    await replica?.close();
    await service?.close();
  });

  const me = (url: string, token: string) => fetch(`${url}/v1/me`, { headers: bearer(token) });
  const lookups = async (result: string) => (await service.metrics.tokenLookups.get()).values.find((v) => v.labels.result === result)?.value ?? 0;
  /** Until both processes hear changes (each listener subscribes in the background at start). */
  const cached = async (account: SeededAccount) => {
    await eventually(async () => {
      const before = await lookups('hit');
      await me(service.url, account.token);
      await me(service.url, account.token);
      return (await lookups('hit')) > before;
    }, { what: 'a token lookup answered from the cache' });
    expect((await me(replica.url, account.token)).status).toBe(200);
  };

  it('answers a known token from memory: the second use reads nothing', async () => {
    const account = await seedAccount(service.prisma, { slug: 'hits', scopes: ['read'] });
    await cached(account);
    const hits = await lookups('hit');
    const misses = await lookups('miss');
    for (let i = 0; i < 5; i++) expect((await me(service.url, account.token)).status).toBe(200);
    expect((await lookups('hit')) - hits).toBe(5);
    expect(await lookups('miss')).toBe(misses);
  });

  it('refuses a token revoked by another process at once in every replica, with the revocation time', async () => {
    const account = await seedAccount(service.prisma, { slug: 'revoked-outside', scopes: ['read'] });
    await cached(account);
    const revokedAt = new Date();
    await outside.query('UPDATE access_tokens SET revoked_at = $2 WHERE id = $1::uuid', [account.tokenId, revokedAt]);
    for (const url of [service.url, replica.url]) {
      const refused = await eventually(async () => {
        const res = await me(url, account.token);
        return res.status === 401 ? ((await res.json()) as { error: string }) : null;
      }, { timeoutMs: 2000, what: `the revocation heard by ${url}` });
      expect(refused.error).toContain(`was revoked at ${revokedAt.toISOString()}`);
    }
  });

  it('refuses a token on the very next request after the API revoked it, in the process that revoked it', async () => {
    const account = await seedAccount(service.prisma, { slug: 'revoked-here', scopes: ['read', 'run'] });
    await cached(account);
    // Tokens are managed with the owner's device-login session (what `svc tokens revoke` holds).
    const session = await issueSessionToken(service.prisma, account);
    const revoked = await fetch(`${service.url}/v1/tokens/${account.tokenId}`, { method: 'DELETE', headers: bearer(session) });
    expect(revoked.status).toBe(204);
    expect((await me(service.url, account.token)).status).toBe(401);
    await eventually(async () => (await me(replica.url, account.token)).status === 401, { timeoutMs: 2000, what: 'the replica refusing the revoked token' });
  });

  it("hears a token's deletion with its organization (a cascade, no code path of ours) and a narrowed scope", async () => {
    const gone = await seedAccount(service.prisma, { slug: 'deleted-org', scopes: ['read'] });
    const narrowed = await seedAccount(service.prisma, { slug: 'narrowed', scopes: ['read', 'run'] });
    await cached(gone);
    await cached(narrowed);
    const readWorkflow = () => fetch(`${service.url}/v1/workflows/acme%2Fflow`, { headers: bearer(narrowed.token) });
    expect((await readWorkflow()).status).toBe(404);
    await outside.query('DELETE FROM organizations WHERE id = $1::uuid', [gone.orgId]);
    await outside.query("UPDATE access_tokens SET scopes = '{run}' WHERE id = $1::uuid", [narrowed.tokenId]);
    await eventually(async () => (await me(service.url, gone.token)).status === 401, { timeoutMs: 2000, what: 'the deleted token refused' });
    await eventually(async () => (await readWorkflow()).status === 403, { timeoutMs: 2000, what: 'the narrowed token refused reads' });
  });

  it('serves nothing from memory while its listener is cut off, hears a revocation made meanwhile, and caches again once back', async () => {
    const account = await seedAccount(service.prisma, { slug: 'deaf', scopes: ['read'] });
    await cached(account);
    // Every session LISTENing on the token channel is cut, as a Postgres restart or failover would.
    const cut = await outside.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN svc_token_changes'");
    expect(cut.rowCount).toBeGreaterThanOrEqual(2);
    await outside.query('UPDATE access_tokens SET revoked_at = now() WHERE id = $1::uuid', [account.tokenId]);
    await eventually(async () => (await me(service.url, account.token)).status === 401, { timeoutMs: 2000, what: 'the revocation made while not listening honoured' });
    const other = await seedAccount(service.prisma, { slug: 'deaf-after', scopes: ['read'] });
    await cached(other);
  });
});
