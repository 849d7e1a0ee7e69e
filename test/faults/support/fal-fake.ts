import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import sharp from 'sharp';

/**
 * The fault suite's stand-in for fal's queue API, and its ground truth about fal jobs:
 * `POST /fal/{app}` submits a job (answers request_id, status_url, response_url, cancel_url),
 * `GET …/status` answers IN_PROGRESS until `release()` and COMPLETED after, `GET …/requests/{id}`
 * answers the result (one small real PNG, served by the fake too), `PUT …/cancel` cancels. It
 * records every submit by request id, every status poll (with when the connection that carried it
 * was opened, so a scenario can tell a poll sent by a process started, or still alive, after a
 * kill) and every cancel.
 *
 * Billing rule: a job is billed once, the app's price per image, when it is COMPLETED (its status
 * answered so after `release()`) and its result is read; reading it again bills nothing more. A
 * job cancelled before it completed, never released, or abandoned (no one polls or reads it any
 * more) is not billed. Real fal bills a job that ran whether or not anyone reads it: an abandoned
 * job would cost money here unseen by `billedMicros`, so a scenario counts submits and unread
 * jobs (`undelivered`) beside the bill.
 */

export const FAL_APP = 'fal-ai/flux/schnell';
/** Micro-USD per image of FAL_APP: what the service reserves and charges, and what the fake bills. */
export const FAL_PRICE_MICROS = 3000;

/** The environment that points a service at the fake. */
export function falEnv(fakeUrl: string): Record<string, string> {
  return { FAL_KEY: 'fal-fault-fake-0123456789abcdef', FAL_BASE_URL: `${fakeUrl}/fal`, FAL_APPS: `${FAL_APP}=${FAL_PRICE_MICROS}` };
}

export interface FalPoll {
  at: number;
  /** When the TCP connection that carried the poll was accepted. */
  connectedAt: number;
}

export interface FalJob {
  requestId: string;
  /** What followed `tag:` in the prompt (up to a space), or null. */
  tag: string | null;
  submittedAt: number;
  polls: FalPoll[];
  /** Times its cancel URL was called. */
  cancels: number[];
  /** When its status first answered COMPLETED (null: not yet). */
  completedAt: number | null;
  /** Reads of its result while COMPLETED. */
  resultReads: number;
  billedMicros: number;
}

export interface FalFake {
  url: string;
  /** Every job submitted, in submit order. */
  readonly jobs: readonly FalJob[];
  jobsFor(tag: string): FalJob[];
  /** Jobs submitted and not yet completed: what fal holds in progress now. */
  inProgress(): number;
  /** From now on every job (those held so far included) answers COMPLETED. */
  release(): void;
  billedMicros(): number;
  /** Jobs not cancelled whose result was never read while COMPLETED: abandoned, or not finished yet. */
  undelivered(): FalJob[];
  /** Requests the fake did not know (method and path), for a look after a failure. */
  readonly unknown: readonly string[];
  close(): Promise<void>;
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function readBody(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
        resolve(typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {});
      } catch {
        resolve({});
      }
    });
  });
}

export async function startFalFake(): Promise<FalFake> {
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#36c' } }).png().toBuffer();
  const jobs: FalJob[] = [];
  const byId = new Map<string, FalJob>();
  const connectedAt = new WeakMap<Socket, number>();
  const unknown: string[] = [];
  let released = false;

  const server = http.createServer((req, res) => {
    const at = Date.now();
    void readBody(req).then((body) => {
      const base = fake.url;
      const path = (req.url ?? '').split('?')[0]!;
      if (req.method === 'GET' && path === '/files/out.png') {
        res.writeHead(200, { 'content-type': 'image/png' });
        res.end(png);
        return;
      }
      if (req.method === 'POST' && path === `/fal/${FAL_APP}`) {
        const requestId = `req-${jobs.length + 1}`;
        const prompt = typeof body.prompt === 'string' ? body.prompt : '';
        const job: FalJob = { requestId, tag: /tag:(\S+)/.exec(prompt)?.[1] ?? null, submittedAt: at, polls: [], cancels: [], completedAt: null, resultReads: 0, billedMicros: 0 };
        jobs.push(job);
        byId.set(requestId, job);
        const jobUrl = `${base}/fal/requests/${requestId}`;
        return json(res, 200, { request_id: requestId, status_url: `${jobUrl}/status`, response_url: jobUrl, cancel_url: `${jobUrl}/cancel` });
      }
      const match = /^\/fal\/requests\/([^/]+)(\/status|\/cancel)?$/.exec(path);
      const job = match ? byId.get(match[1]!) : undefined;
      if (!match || !job) {
        unknown.push(`${req.method} ${path}`);
        return json(res, 404, { detail: `no route ${req.method} ${path}` });
      }
      const done = (): boolean => job.completedAt !== null;
      if (req.method === 'GET' && match[2] === '/status') {
        job.polls.push({ at, connectedAt: connectedAt.get(req.socket) ?? at });
        if (released && job.cancels.length === 0) job.completedAt ??= at;
        return json(res, 200, { status: done() ? 'COMPLETED' : 'IN_PROGRESS' });
      }
      if (req.method === 'PUT' && match[2] === '/cancel') {
        job.cancels.push(at);
        return json(res, 202, { status: 'CANCELLATION_REQUESTED' });
      }
      if (req.method === 'GET' && match[2] === undefined) {
        // fal answers a result asked for too early with 400; nothing is billed.
        if (!done()) return json(res, 400, { detail: 'Request is still in progress' });
        job.resultReads += 1;
        if (job.resultReads === 1) job.billedMicros = FAL_PRICE_MICROS;
        return json(res, 200, { images: [{ url: `${base}/files/out.png`, width: 8, height: 8, content_type: 'image/png' }] });
      }
      unknown.push(`${req.method} ${path}`);
      json(res, 405, { detail: `no route ${req.method} ${path}` });
    });
  });
  server.on('connection', (socket: Socket) => connectedAt.set(socket, Date.now()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const fake: FalFake = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    jobs,
    jobsFor: (tag) => jobs.filter((j) => j.tag === tag),
    inProgress: () => jobs.filter((j) => j.completedAt === null && j.cancels.length === 0).length,
    release: () => void (released = true),
    billedMicros: () => jobs.reduce((sum, j) => sum + j.billedMicros, 0),
    undelivered: () => jobs.filter((j) => j.cancels.length === 0 && j.resultReads === 0),
    unknown,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}
