import { issueToken } from '../../services/platform/access-token';
import { isOpName, OP_NAMES, OPERATIONS, ROUTE_NAMES, ROUTES, type Operation } from '../../services/contract';
import { TokenRepository } from '../../services/store';
import { issueSessionToken, seedAccount, type SeededAccount } from '../support/fixtures';
import { adder } from '../support/json-api';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { expectFigure, figure } from './support/figures';
import { exampleInput } from './support/hostile-requests';
import { inPool } from './support/raw-http';
import { oneCharMutations } from './support/token-mutations';

/**
 * S2: no credential but a valid one of the caller's own is accepted, and another
 * organization's runs, workflows and tokens are 404 to a caller, as if they did not exist.
 * Every token one character away from a valid personal, session and OAuth token, and revoked
 * and expired ones of each kind, are sent to every route that needs a token; every route of
 * the contract with an id is called with the other organization's ids.
 */

const declarations: [string, Operation][] = [...OP_NAMES, ...ROUTE_NAMES].map((name) => [name, isOpName(name) ? OPERATIONS[name] : ROUTES[name]]);
const needingToken = declarations.filter(([, op]) => op.auth === 'required');

const MEANINGFUL: Record<string, unknown> = { version: '1.0.0', bump: 'minor', slug: 'mine' };

/** A request for `op` with a schema-valid input (the S1 generator's example), path ids from `ids` (else the example's random UUIDs). */
function requestFor(op: Operation, ids: Record<string, string> = {}): { path: string; init: RequestInit } {
  // The example's text is schema-valid but not always meaningful ("a" as a version): the few
  // fields the service reads further get real values, so that what answers is the id's check.
  const input = { ...(exampleInput(op) as Record<string, unknown>) };
  for (const [field, value] of Object.entries(MEANINGFUL)) if (field in input && !op.http.pathParams.includes(field)) input[field] = value;
  let path = op.http.path;
  for (const name of op.http.pathParams) {
    path = path.replace(`:${name}`, encodeURIComponent(ids[name] ?? String(input[name])));
    delete input[name];
  }
  const json = (op.http.method === 'POST' || op.http.method === 'PATCH') && op.http.body !== 'bytes';
  if (op.http.body === 'bytes') return { path, init: { method: op.http.method, body: new Uint8Array([0x89, 0x50, 0x4e, 0x47]), headers: { 'Content-Type': 'image/png' } } };
  if (json) return { path, init: { method: op.http.method, body: JSON.stringify(input), headers: { 'Content-Type': 'application/json' } } };
  // Optional query fields of the example (a version selector "a") would make a real id 404 for other reasons: required ones only.
  const required = new Set((op.input as { required?: string[] }).required ?? []);
  const query = new URLSearchParams(Object.entries(input).filter(([k]) => required.has(k)).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return { path: query ? `${path}?${query}` : path, init: { method: op.http.method } };
}

describe('S2: mutated, revoked and expired tokens; other organizations’ resources', () => {
  let service: TestService;
  let other: SeededAccount;
  let session: string;
  let oauth: string;
  let otherSession: string;
  const theirs = { run: '', workflow: '', address: '', token: '', batch: '', schedule: '' };

  /** The status of `op` called with `token` (null: none). */
  async function statusOf(op: Operation, token: string | null, ids: Record<string, string> = {}): Promise<{ status: number; text: string }> {
    const { path, init } = requestFor(op, ids);
    const res = await fetch(`${service.url}${path}`, { ...init, headers: { ...(init.headers as Record<string, string>), ...(token ? bearer(token) : {}) } });
    // An SSE answer (a run started) is cut: only whether it was let in counts.
    const text = res.headers.get('content-type')?.startsWith('text/event-stream') ? (await res.body?.cancel(), '') : await res.text();
    return { status: res.status, text };
  }

  async function storeToken(account: SeededAccount, kind: 'session' | 'oauth' | 'personal', extra: { expiresAt?: Date; revoke?: boolean } = {}): Promise<string> {
    const issued = issueToken(kind);
    const tokens = new TokenRepository(service.prisma);
    const created = await tokens.create({ userId: account.userId, orgId: account.orgId, name: `s2 ${kind}`, hash: issued.hash, displayPrefix: issued.displayPrefix, scopes: ['read', 'run'], kind, expiresAt: extra.expiresAt ?? null });
    if (extra.revoke) await service.prisma.accessToken.update({ where: { id: created.id }, data: { revokedAt: new Date() } });
    return issued.value;
  }

  beforeAll(async () => {
    service = await startTestService();
    session = await issueSessionToken(service.prisma, service.account);
    oauth = await storeToken(service.account, 'oauth', { expiresAt: new Date(Date.now() + 3_600_000) });
    other = await seedAccount(service.prisma, { slug: 'other', scopes: ['read', 'run'], balanceMicros: 100_000_000 });
    otherSession = await issueSessionToken(service.prisma, other);

    // The other organization's run, workflow (published) and token, made through the API.
    const ran = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(other.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow: adder(1, 2) }) });
    expect(ran.status).toBe(200);
    await readSse(ran);
    theirs.run = (await service.prisma.run.findFirstOrThrow({ where: { orgId: other.orgId } })).id;
    const headers = { ...bearer(other.token), 'Content-Type': 'application/json' };
    const created = await fetch(`${service.url}/editor/workflows`, { method: 'POST', headers, body: JSON.stringify({ name: 'theirs', definition: adder(1, 2) }) });
    expect(created.status).toBe(201);
    theirs.workflow = ((await created.json()) as { id: string }).id;
    const published = await fetch(`${service.url}/editor/workflows/${theirs.workflow}/publish`, { method: 'POST', headers, body: JSON.stringify({ slug: 'theirs' }) });
    expect(published.status).toBe(201);
    theirs.address = `${other.orgSlug}/theirs`;
    theirs.token = other.tokenId!;
    const batch = await fetch(`${service.url}/v1/batches`, { method: 'POST', headers, body: JSON.stringify({ workflow: adder(1, 2), rows: [{}] }) });
    expect(batch.status).toBe(201);
    theirs.batch = ((await batch.json()) as { id: string }).id;
    const schedule = await fetch(`${service.url}/v1/schedules`, { method: 'POST', headers, body: JSON.stringify({ workflowRef: `${theirs.address}@1`, cron: '0 9 * * *' }) });
    expect(schedule.status).toBe(201);
    theirs.schedule = ((await schedule.json()) as { id: string }).id;
  });

  afterAll(async () => {
    await service?.close();
  });

  it('accepts the valid tokens themselves (the baseline the mutations are one character from)', async () => {
    const me = declarations.find(([name]) => name === 'me.get')![1];
    for (const token of [service.account.token, session, oauth]) expect((await statusOf(me, token)).status).toBe(200);
  });

  it('accepts none of the tokens one character away from a valid personal, session or OAuth token, on any route', async () => {
    const attempts = [service.account.token, session, oauth].flatMap((token) => oneCharMutations(token).map((m) => ({ ...m, from: token.slice(0, 5) })));
    const answers = await inPool(attempts, 16, async (attempt, i) => {
      const [name, op] = needingToken[i % needingToken.length]!;
      return { name, attempt, ...(await statusOf(op, attempt.value)) };
    });
    const accepted = answers.filter((a) => a.status !== 401);
    figure('S2', 'one-character token mutations sent', attempts.length);
    if (accepted.length) console.log(accepted.slice(0, 10).map((a) => `${a.name} ${a.attempt.from}… ${a.attempt.label} → ${a.status} ${a.text.slice(0, 200)}`).join('\n'));
    expectFigure('S2', 'accepted (mutated tokens)', accepted.length, { max: 0 });
  }, 120_000);

  it('accepts no revoked or expired personal, session or OAuth token on any route', async () => {
    const past = new Date(Date.now() - 1000);
    const dead: { label: string; token: string }[] = [
      { label: 'personal, revoked', token: (await seedAccount(service.prisma, { slug: 'revoked', scopes: ['read', 'run'], revokedAt: past })).token },
      { label: 'personal, expired', token: (await seedAccount(service.prisma, { slug: 'expired', scopes: ['read', 'run'], expiresAt: past })).token },
      { label: 'session, revoked', token: await storeToken(service.account, 'session', { expiresAt: new Date(Date.now() + 3_600_000), revoke: true }) },
      { label: 'session, expired', token: await storeToken(service.account, 'session', { expiresAt: past }) },
      { label: 'OAuth, revoked', token: await storeToken(service.account, 'oauth', { expiresAt: new Date(Date.now() + 3_600_000), revoke: true }) },
      { label: 'OAuth, expired', token: await storeToken(service.account, 'oauth', { expiresAt: past }) },
    ];
    // One revoked through the API after it worked: the next request with it is refused.
    const minted = await fetch(`${service.url}/v1/tokens`, { method: 'POST', headers: { ...bearer(session), 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'to revoke', scopes: ['read', 'run'] }) });
    expect(minted.status).toBe(201);
    const { id, token } = (await minted.json()) as { id: string; token: string };
    const me = declarations.find(([name]) => name === 'me.get')![1];
    expect((await statusOf(me, token)).status).toBe(200);
    expect((await fetch(`${service.url}/v1/tokens/${id}`, { method: 'DELETE', headers: bearer(session) })).status).toBe(204);
    dead.push({ label: 'personal, revoked through DELETE /v1/tokens/:id', token });

    const attempts = dead.flatMap((d) => needingToken.map(([name, op]) => ({ ...d, name, op })));
    const answers = await inPool(attempts, 16, async (a) => ({ a, ...(await statusOf(a.op, a.token)) }));
    const accepted = answers.filter((r) => r.status !== 401);
    if (accepted.length) console.log(accepted.slice(0, 10).map((r) => `${r.a.name} ${r.a.label} → ${r.status} ${r.text.slice(0, 200)}`).join('\n'));
    figure('S2', 'revoked and expired token requests sent', attempts.length);
    expectFigure('S2', 'accepted (revoked or expired tokens)', accepted.length, { max: 0 });
  }, 120_000);

  it("answers 404 for the other organization's runs, workflows and tokens on every route with an id", async () => {
    // Which resource an `id` names, by where its route lives; a new route with an id must be added here.
    const idOf = (path: string): string | undefined =>
      path.startsWith('/v1/runs/') ? theirs.run : path.startsWith('/editor/workflows/') ? theirs.workflow : path.startsWith('/v1/tokens/') ? theirs.token : path.startsWith('/v1/batches/') ? theirs.batch : path.startsWith('/v1/schedules/') ? theirs.schedule : undefined;
    // Public by design, not another organization's secret: the node catalog, and published
    // workflows (docs/workflows.md: "publishing is sharing, as in a package registry").
    const PUBLIC = ['/v1/nodes/', '/v1/workflows/'];
    const withId = declarations.filter(([, op]) => op.http.pathParams.includes('id') && !PUBLIC.some((p) => op.http.path.startsWith(p)));
    const unknown = withId.filter(([, op]) => idOf(op.http.path) === undefined).map(([name]) => name);
    expect(unknown).toEqual([]);

    // Their own token finds each of them (the ids are real): reading routes only, nothing changes.
    const own = (op: Operation) => (op.kinds && !op.kinds.includes('personal') ? otherSession : other.token);
    for (const [name, op] of withId.filter(([, op]) => op.readOnly && op.response === 'json' && op.http.pathParams.length === 1)) {
      expect({ name, status: (await statusOf(op, own(op), { id: idOf(op.http.path)! })).status }).toEqual({ name, status: 200 });
    }

    const mine = (op: Operation) => (op.kinds && !op.kinds.includes('personal') ? session : service.account.token);
    const answers: { name: string; status: number; text: string }[] = [];
    for (const [name, op] of withId) answers.push({ name, ...(await statusOf(op, mine(op), { id: idOf(op.http.path)!, version: '1.0.0' })) });
    // Listing runs of their (public) workflow lists only the caller's own runs of it.
    const listed = await fetch(`${service.url}/v1/runs?workflow=${encodeURIComponent(theirs.address)}`, { headers: bearer(service.account.token) });
    const listText = await listed.text();
    const leaked = listText.includes(theirs.run);

    const not404 = answers.filter((a) => a.status !== 404);
    if (not404.length) console.log(not404.map((a) => `${a.name} → ${a.status} ${a.text.slice(0, 200)}`).join('\n'));
    figure('S2', "other organizations' resources tried", answers.length);
    expect(leaked).toBe(false);
    expectFigure('S2', "other organizations' resources not 404", not404.length, { max: 0 });
    // Still theirs, untouched: the refused DELETEs and PATCHes changed nothing.
    expect(await service.prisma.workflow.findUnique({ where: { id: theirs.workflow } })).toMatchObject({ orgId: other.orgId, deletedAt: null });
    expect(await service.prisma.accessToken.findUnique({ where: { id: theirs.token } })).toMatchObject({ revokedAt: null });
    expect(await service.prisma.schedule.findUnique({ where: { id: theirs.schedule } })).toMatchObject({ orgId: other.orgId, status: 'active', deletedAt: null });
  }, 120_000);
});
