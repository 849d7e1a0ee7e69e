import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import type { Workload } from '../support/context';
import { closedLoop } from '../support/load';
import type { Row } from '../support/report';
import { ONE_NODE, post, textOf } from '../support/service-client';

const CLIENTS = 32;

/**
 * The peer: a raw node:http server that parses the JSON body and inserts it as one row into
 * Postgres (one autocommitted INSERT, fsync on like ours), answering its id.
 */
async function rawAdmission(databaseUrl: string): Promise<{ url: string; close(): Promise<void> }> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  await pool.query('CREATE TABLE IF NOT EXISTS bench_raw_runs (id bigserial PRIMARY KEY, body jsonb NOT NULL, at timestamptz NOT NULL DEFAULT now())');
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
      pool.query<{ id: string }>('INSERT INTO bench_raw_runs (body) VALUES ($1) RETURNING id', [body]).then(
        ({ rows }) => res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: rows[0]!.id })),
        () => res.writeHead(500).end(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      await new Promise((resolve) => server.close(resolve));
      await pool.end();
    },
  };
}

/**
 * Both clients open a connection per request (node:http, no keep-alive): ours' stream never ends
 * (no worker reads its queue), so its connection is dropped after the first event and cannot be
 * reused, and the peer is made to pay the same TCP set-up and teardown, so that what differs in
 * the CPU per request is the servers' work, not the clients'. (With `fetch` clients, ours'
 * aborted reads and web streams were a third of its busy samples.)
 */
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

/** Reads a stream's first SSE message (up to its blank line); rejects if the stream ends first. */
function firstMessage(res: http.IncomingMessage): Promise<string> {
  res.setEncoding('utf8');
  return new Promise((resolve, reject) => {
    let text = '';
    res.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\n\n')) resolve(text);
    });
    res.on('end', () => reject(new Error('the stream ended before its first event')));
    res.on('error', reject);
  });
}

/** POST /v1/runs up to its first event (run.started: validated, persisted, enqueued), then the stream is dropped. */
async function admitOnce(url: string, token: string, body: string): Promise<void> {
  const res = await post(`${url}/v1/runs`, body, { Authorization: `Bearer ${token}` }, agent);
  if (res.statusCode !== 200) throw new Error(`POST /v1/runs answered ${res.statusCode}: ${(await textOf(res)).slice(0, 300)}`);
  try {
    const seen = await firstMessage(res);
    if (!seen.includes('"run.started"')) throw new Error(`the first event is not run.started: ${seen.slice(0, 200)}`);
  } finally {
    res.destroy();
  }
}

/** The peer's request: POST /runs and its JSON answer, read whole. */
async function rawOnce(url: string, body: string): Promise<void> {
  const res = await post(`${url}/runs`, body, {}, agent);
  const text = await textOf(res);
  if (res.statusCode !== 201) throw new Error(`raw admission answered ${res.statusCode}: ${text.slice(0, 300)}`);
  JSON.parse(text);
}

/**
 * B7: POST /v1/runs admission alone (authenticate, validate, plan, price, persist with the first
 * step's reservation, enqueue, run.started), on an API-only service whose queue no worker reads,
 * 32 clients in a closed loop. Peer: raw node:http + one Postgres insert. CPU per request is this
 * process' (the clients run in it too, alike for both).
 */
export const b7: Workload = {
  id: 'B7',
  title: 'POST /v1/runs admission alone (to run.started)',
  async run(ctx) {
    const seconds = ctx.scale(10, 4);
    // Its runs never finish, so each keeps its hold on the balance: a million USD covers any run length.
    const api = await ctx.startService({ env: { ROLE: 'api', REDIS_PREFIX: 'svcbench-b7' }, balanceMicros: 1_000_000_000_000 });
    const body = JSON.stringify(ONE_NODE);
    let ours;
    try {
      ours = await closedLoop(ctx, 'B7 ours', { clients: CLIENTS, seconds }, () => admitOnce(api.url, api.account.token, body));
    } finally {
      await api.close();
    }
    ctx.say(`ours  ${ours.perSecond.toFixed(0)} req/s, ${ours.cpuMicrosPerCall.toFixed(0)} µs CPU per request, latency ${ours.latency.summary()}`);
    const raw = await rawAdmission(ctx.stack.databaseUrl);
    let peer;
    try {
      peer = await closedLoop(ctx, 'B7 raw', { clients: CLIENTS, seconds }, () => rawOnce(raw.url, body));
    } finally {
      await raw.close();
    }
    ctx.say(`raw   ${peer.perSecond.toFixed(0)} req/s, ${peer.cpuMicrosPerCall.toFixed(0)} µs CPU per request, latency ${peer.latency.summary()}`);
    const rows: Row[] = [
      { id: 'B7', figure: 'admission req/s (32 clients)', ours: ours.perSecond, unit: '/s', kind: 'rate', peer: { name: 'node http + pg insert', value: peer.perSecond } },
      { id: 'B7', figure: 'CPU per admission (this process)', ours: ours.cpuMicrosPerCall, unit: 'µs', kind: 'time', peer: { name: 'node http + pg insert', value: peer.cpuMicrosPerCall } },
      { id: 'B7', figure: 'admission p50', ours: ours.latency.percentile(50), unit: 'ms', kind: 'time', peer: { name: 'node http + pg insert', value: peer.latency.percentile(50) } },
    ];
    return rows;
  },
};
