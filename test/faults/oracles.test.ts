import { Pool } from 'pg';
import { startFaultProxy } from '../support/fault-proxy';
import { startTestService, type TestService } from '../support/service';
import { checkInvariants, type CheckOptions } from './support/checker';
import { providerEnv, startProviderFake, type ProviderFake } from './support/provider-fake';
import { followRun, type ClientRecord } from './support/run-client';

/**
 * The fault suite's two oracles, proven on a single service: a clean run passes the checker with
 * no violation, every check fails when the state it guards is broken on purpose, and a client cut
 * mid-stream resumes to a record the checker accepts.
 */

const HEARTBEAT_MS = 200;

function twoChats(tag: string): unknown {
  return {
    workflow: {
      version: 2,
      nodes: [
        { id: 'a', uses: 'openai-chat', inputs: { prompt: `tag:${tag} first question` } },
        { id: 'b', uses: 'openai-chat', inputs: { prompt: `tag:${tag} second question` } },
        { id: 'outA', uses: 'output', inputs: { value: '${a.text}' } },
        { id: 'outB', uses: 'output', inputs: { value: '${b.text}' } },
      ],
    },
    maxCostUsd: 0.5,
  };
}

describe('fault suite oracles: provider fake, run client and checker', () => {
  let provider: ProviderFake;
  let service: TestService;
  let pool: Pool;
  let clean: ClientRecord;
  let opening: number;

  beforeAll(async () => {
    provider = await startProviderFake();
    service = await startTestService({ env: { ...providerEnv(provider.url), SSE_HEARTBEAT_MS: String(HEARTBEAT_MS) } });
    pool = new Pool({ connectionString: service.db.url, max: 2 });
    opening = Number((await pool.query<{ b: string }>('SELECT balance_micros::text AS b FROM organizations WHERE id = $1', [service.account.orgId])).rows[0]!.b);
    clean = await followRun(service.url, service.account.token, twoChats('clean'), { deadlineMs: 20_000, heartbeatMs: HEARTBEAT_MS });
  });

  afterAll(async () => {
    await pool?.end();
    await service?.close();
    await provider?.close();
  });

  function check(overrides: Partial<CheckOptions> = {}): ReturnType<typeof checkInvariants> {
    return checkInvariants({ pool, apiUrl: service.url, token: service.account.token, provider, clients: [clean], openingBalances: { [service.account.orgId]: opening }, ...overrides });
  }

  /** Breaks the database with `breakSql`, checks, and mends it with `mendSql` whatever happened. */
  async function checkBroken(breakSql: string, mendSql: string, params: unknown[]): Promise<string[]> {
    await pool.query(breakSql, params);
    try {
      return (await check()).violations;
    } finally {
      await pool.query(mendSql, params);
    }
  }

  it('passes a clean run of two parallel provider steps with no violation, charged exactly what the provider billed', async () => {
    expect(clean.gaveUp).toBeUndefined();
    expect(clean.httpStatus).toBe(200);
    expect(clean.messages.at(-1)?.data).toBe('[DONE]');
    const calls = provider.callsFor('clean');
    expect(calls.map((c) => c.status)).toEqual(['answered', 'answered']);
    expect(calls.every((c) => c.billedMicros > 0 && !c.cancelled)).toBe(true);
    const result = await check();
    expect(result.violations).toEqual([]);
    expect(result.counts).toMatchObject({ runs: 1, completed: 1, failed: 0, clients: 1, clientsGaveUp: 0, possiblyLostAttempts: 0 });
    expect(result.counts.billedMicros).toBe(provider.billedMicrosFor('clean'));
    expect(result.counts.chargedMicros).toBe(result.counts.billedMicros);
  });

  it('reports an altered or missing ledger row', async () => {
    const altered = await checkBroken(
      "UPDATE ledger_entries SET amount_micros = amount_micros - 7 WHERE run_id = $1 AND kind = 'run_charge' AND note = 'step a'",
      "UPDATE ledger_entries SET amount_micros = amount_micros + 7 WHERE run_id = $1 AND kind = 'run_charge' AND note = 'step a'",
      [clean.runId],
    );
    expect(altered).toEqual(expect.arrayContaining([expect.stringMatching(/step a \(completed\): cost \d+ but the ledger charged \d+/), expect.stringMatching(/balance .* ≠ opening/)]));
    const row = (await pool.query<{ id: string }>("SELECT id FROM ledger_entries WHERE run_id = $1 AND note = 'step b'", [clean.runId])).rows[0]!;
    const columns = 'id, org_id, amount_micros, kind, run_id, step_id, note, created_at';
    const kept = (await pool.query<Record<string, unknown>>(`SELECT ${columns} FROM ledger_entries WHERE id = $1`, [row.id])).rows[0]!;
    await pool.query('DELETE FROM ledger_entries WHERE id = $1', [row.id]);
    let missing: string[];
    try {
      missing = (await check()).violations;
    } finally {
      await pool.query(`INSERT INTO ledger_entries (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [kept.id, kept.org_id, kept.amount_micros, kept.kind, kept.run_id, kept.step_id, kept.note, kept.created_at]);
    }
    expect(missing).toEqual(expect.arrayContaining([expect.stringMatching(/step b \(completed\): cost \d+ but the ledger charged 0/)]));
    expect((await check()).violations).toEqual([]);
  });

  it('reports a run set back to running, spending above its cap, and a hold left on a terminal run', async () => {
    const running = await checkBroken("UPDATE runs SET status = 'running' WHERE id = $1", "UPDATE runs SET status = 'completed' WHERE id = $1", [clean.runId]);
    expect(running).toContain(`run ${clean.runId}: not terminal (status running)`);
    const overCap = await checkBroken('UPDATE runs SET spent_micros = cap_micros + 1 WHERE id = $1', 'UPDATE runs SET spent_micros = charged_micros WHERE id = $1', [clean.runId]);
    expect(overCap).toEqual(expect.arrayContaining([expect.stringMatching(/spent \d+ > cap \d+/)]));
    const reserved = await checkBroken('UPDATE runs SET reserved_micros = 5 WHERE id = $1', 'UPDATE runs SET reserved_micros = 0 WHERE id = $1', [clean.runId]);
    expect(reserved).toEqual(expect.arrayContaining([`run ${clean.runId} is completed but still reserves 5 micro-USD`]));
    expect((await check()).violations).toEqual([]);
  });

  it('reports a step left running with its reservation in a stopped run, and the money its organization still holds for it', async () => {
    // What a lost attempt of a failed run looked like before the reaper settled them: step, run and organization all holding.
    const open = [
      "UPDATE steps SET status = 'running', reserved_micros = 7 WHERE run_id = $1 AND node_id = 'a'",
      'UPDATE runs SET reserved_micros = 7, held_micros = 7 WHERE id = $1',
      'UPDATE organizations SET held_micros = held_micros + 7 WHERE id = (SELECT org_id FROM runs WHERE id = $1)',
    ];
    const settle = [
      "UPDATE steps SET status = 'completed', reserved_micros = 0 WHERE run_id = $1 AND node_id = 'a'",
      'UPDATE runs SET reserved_micros = 0, held_micros = 0 WHERE id = $1',
      'UPDATE organizations SET held_micros = held_micros - 7 WHERE id = (SELECT org_id FROM runs WHERE id = $1)',
    ];
    let violations: string[];
    try {
      for (const sql of open) await pool.query(sql, [clean.runId]);
      violations = (await check()).violations;
    } finally {
      for (const sql of settle) await pool.query(sql, [clean.runId]);
    }
    expect(violations).toEqual(
      expect.arrayContaining([
        `run ${clean.runId} step a is still running in a completed run`,
        `run ${clean.runId} step a: still reserves 7 micro-USD in a completed run`,
        `run ${clean.runId} is completed but still holds 7 micro-USD`,
        expect.stringMatching(/organization \S+: holds \d+ but its unfinished runs hold \d+ micro-USD/),
        expect.stringMatching(/organization \S+: 1 finished run\(s\) still hold or reserve money/),
      ]),
    );
    expect((await check()).violations).toEqual([]);
  });

  it('reports a run charged less than the provider billed, even when the books agree with themselves', async () => {
    // One micro-USD less everywhere the service keeps it: only the provider's record tells.
    const steps = "UPDATE steps SET cost_micros = cost_micros + $2 WHERE run_id = $1 AND node_id = 'a'";
    const ledger = "UPDATE ledger_entries SET amount_micros = amount_micros - $2 WHERE run_id = $1 AND note = 'step a'";
    const runs = 'UPDATE runs SET spent_micros = spent_micros + $2, charged_micros = charged_micros + $2, settled_micros = settled_micros + $2 WHERE id = $1';
    const orgs = 'UPDATE organizations SET balance_micros = balance_micros - $2 WHERE id = (SELECT org_id FROM runs WHERE id = $1)';
    const shift = async (by: number): Promise<void> => {
      for (const sql of [steps, ledger, runs, orgs]) await pool.query(sql, [clean.runId, by]);
    };
    await shift(-1);
    let violations: string[];
    try {
      violations = (await check()).violations;
    } finally {
      await shift(1);
    }
    const billed = provider.billedMicrosFor('clean');
    // Charged more with no attempt lost; then with step a's first attempt lost, more than its estimate more.
    await shift(1);
    let over: string[];
    let overLost: string[];
    const estimate = provider.estimateMicros({ prompt: 'tag:clean first question' });
    try {
      over = (await check()).violations;
      await pool.query("UPDATE steps SET attempt = 2 WHERE run_id = $1 AND node_id = 'a'", [clean.runId]);
      overLost = (await check()).violations;
      await shift(estimate);
      expect((await check()).violations).toEqual([expect.stringMatching(new RegExp(`charged ${billed + 1 + estimate} micro-USD > billed ${billed} \\+ lost charges ${estimate}`))]);
    } finally {
      await pool.query("UPDATE steps SET attempt = 1 WHERE run_id = $1 AND node_id = 'a'", [clean.runId]);
      await shift(-1 - estimate);
    }
    expect(over).toEqual([`run ${clean.runId} (tag clean): charged ${billed + 1} micro-USD, the provider billed ${billed}, and no attempt was lost`]);
    expect(overLost).toEqual([]);
    expect(estimate).toBeGreaterThan(0);
    expect((await check()).violations).toEqual([]);
    expect(violations).toEqual([
      `run ${clean.runId} (tag clean): charged ${billed - 1} micro-USD for provider calls the provider billed ${billed} (a provider call once made is paid)`,
      `run ${clean.runId} (tag clean): charged ${billed - 1} micro-USD, the provider billed ${billed}, and no attempt was lost`,
    ]);
  });

  it('reports GET /v1/runs/:id outputs that differ from the stream', async () => {
    const violations = await checkBroken(`UPDATE runs SET outputs = '{}' WHERE id = $1 AND $2::text IS NOT NULL`, 'UPDATE runs SET outputs = $2 WHERE id = $1', [clean.runId, JSON.stringify(await outputsOf(clean))]);
    expect(violations).toEqual(expect.arrayContaining([expect.stringMatching(/GET \/v1\/runs\/:id outputs \{\} differ from the stream's run.completed outputs/)]));
  });

  async function outputsOf(record: ClientRecord): Promise<unknown> {
    const terminal = record.messages.find((m) => m.data.includes('"run.completed"'))!;
    return (JSON.parse(terminal.data) as { outputs: unknown }).outputs;
  }

  it('reports a client record with a gap, a duplicate id, two terminal events or no [DONE]', async () => {
    const m = clean.messages;
    const terminalAt = m.findIndex((x) => x.data.includes('"run.completed"'));
    const variants: [string, ClientRecord['messages'], RegExp][] = [
      ['gap', [...m.slice(0, 2), ...m.slice(3)], /event ids not gap-free from 1 \(expected id 3, got 4\)/],
      ['duplicate', [...m.slice(0, 3), m[2]!, ...m.slice(3)], /1 duplicate event id\(s\): 3/],
      ['two terminals', [...m.slice(0, terminalAt + 1), { id: String(Number(m[terminalAt]!.id) + 1), data: m[terminalAt]!.data }, m.at(-1)!], /2 terminal events/],
      ['no [DONE]', m.slice(0, -1), /\[DONE\] sent 0 time\(s\), and not as the last message/],
    ];
    for (const [name, messages, expected] of variants) {
      const { violations } = await check({ clients: [{ ...clean, messages }] });
      expect({ name, violations }).toEqual({ name, violations: [expect.stringMatching(expected)] });
    }
  });

  it('bills nothing for a call it fails on request, and the service retry is charged what the provider billed', async () => {
    provider.behave({ failNext: 1, failStatus: 503 });
    const record = await followRun(service.url, service.account.token, twoChats('retried'), { deadlineMs: 20_000, heartbeatMs: HEARTBEAT_MS });
    const calls = provider.callsFor('retried');
    expect(calls.map((c) => [c.status, c.httpStatus, c.billedMicros > 0])).toEqual([['failed', 503, false], ['answered', 200, true], ['answered', 200, true]]);
    const result = await check({ clients: [record] });
    expect(result.violations).toEqual([]);
    expect(result.counts.chargedMicros).toBe(provider.billedMicrosFor('retried'));
  });

  it('follows a stream cut mid-run by resuming with Last-Event-ID, and the checker accepts the record', async () => {
    const proxy = await startFaultProxy(service.url);
    try {
      provider.behave({ chunkDelayMs: 60, chunks: 6 });
      proxy.cutWhen((bytes) => bytes.includes('"step.started"'));
      const record = await followRun(proxy.url, service.account.token, twoChats('cut'), { deadlineMs: 20_000, heartbeatMs: HEARTBEAT_MS });
      expect(record.gaveUp).toBeUndefined();
      expect(record.resumes).toBeGreaterThanOrEqual(1);
      expect(proxy.heads.some((h) => /^GET \/v1\/runs\/[^/]+\/events/.test(h) && /last-event-id: \d+/i.test(h))).toBe(true);
      const result = await check({ clients: [record] });
      expect(result.violations).toEqual([]);
      expect(result.counts.clientResumes).toBe(record.resumes);
      expect(result.counts.chargedMicros).toBe(provider.billedMicrosFor('cut'));
    } finally {
      provider.behave({ chunkDelayMs: 0, chunks: 4 });
      await proxy.close();
    }
  });

  it('takes a silent connection (no heartbeat for three intervals) for dead and resumes on a fresh one', async () => {
    const proxy = await startFaultProxy(service.url);
    try {
      provider.behave({ chunkDelayMs: 150, chunks: 8 });
      const record = await followRun(proxy.url, service.account.token, twoChats('silent'), {
        deadlineMs: 20_000,
        heartbeatMs: HEARTBEAT_MS,
        onEvent: (message) => {
          if (message.data.includes('"run.started"')) proxy.freezeOpen();
        },
      });
      expect(record.gaveUp).toBeUndefined();
      expect(record.resumes).toBeGreaterThanOrEqual(1);
      expect((await check({ clients: [record] })).violations).toEqual([]);
    } finally {
      provider.behave({ chunkDelayMs: 0, chunks: 4 });
      await proxy.close();
    }
  });

  it('gives up with a reason when the stream is cut before run.started, and the checker reports it', async () => {
    const proxy = await startFaultProxy(service.url);
    try {
      // The POST's connection is reset as it arrives: no answer, no run id (and no run).
      proxy.refuseRequests = (head) => head.startsWith('POST /v1/runs');
      const record = await followRun(proxy.url, service.account.token, twoChats('early'), { deadlineMs: 5_000, heartbeatMs: HEARTBEAT_MS });
      expect(record.runId).toBeUndefined();
      expect(record.gaveUp).toMatch(/cut before run.started .*no run id to resume with/);
      const { violations } = await check({ clients: [record], runIds: [clean.runId!] });
      expect(violations).toEqual([expect.stringMatching(/^client 0: gave up after 0 resume\(s\): the stream was cut before run.started/)]);
    } finally {
      await proxy.close();
    }
  });
});
