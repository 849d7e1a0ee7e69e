import sharp from 'sharp';
import type { RunEvent } from '../../services/contract';
import { safeFetch, type Resolver, type SafeFetchOptions } from '../../services/nodes';
import { AddressAllowList } from '../../services/platform/address-policy';
import { AppError } from '../../services/platform/app-error';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { recordingServer, type RecordingServer } from '../support/recording-server';

const LIMITS = { maxBytes: 1024 * 1024, timeoutMs: 5000 };

async function refusal(url: string, options: Partial<SafeFetchOptions> = {}): Promise<AppError> {
  const err = await safeFetch(url, { ...LIMITS, ...options }).then(
    () => { throw new Error(`${url} was fetched`); },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe('safeFetch refuses what is not public, and the canary receives nothing', () => {
  let canary: RecordingServer;
  let publicServer: RecordingServer;
  let allowPublic: AddressAllowList;
  const toLoopback: Resolver = async (host) => (host === 'evil.test' || host === 'public.test' ? [{ address: '127.0.0.1', family: 4 }] : []);

  beforeAll(async () => {
    canary = await recordingServer();
    // Stands in for a public server: on loopback, admitted only at its exact address and port.
    publicServer = await recordingServer((req, res) => {
      const hops = /^\/hops\/(\d+)$/.exec(req.url ?? '');
      if (req.url === '/to-canary') res.writeHead(302, { location: `${canary.url}/stolen` }).end();
      else if (req.url === '/to-metadata') res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      else if (req.url === '/to-file') res.writeHead(301, { location: 'file:///etc/passwd' }).end();
      else if (req.url === '/to-invalid') res.writeHead(302, { location: `http://[fe80::1%25lo]:${canary.port}/` }).end();
      else if (hops) res.writeHead(302, { location: Number(hops[1]) > 0 ? `/hops/${Number(hops[1]) - 1}` : '/png' }).end();
      else if (req.url === '/png') res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0]));
      else if (req.url === '/text') res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('hello');
      else if (req.url === '/untyped') res.end(Buffer.from([1, 2, 3]));
      else if (req.url === '/big-declared') res.writeHead(200, { 'content-length': String(LIMITS.maxBytes + 1) }).end();
      else if (req.url === '/big-streamed') {
        // No Content-Length: chunked, so only counting the body finds it too big.
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const chunk = Buffer.alloc(256 * 1024);
        let sent = 0;
        const pump = (): void => {
          while (sent < 8 && res.write(chunk)) sent += 1;
          if (sent < 8) res.once('drain', () => { sent += 1; pump(); });
          else res.end();
        };
        pump();
      } else if (req.url === '/slow') setTimeout(() => res.end('late'), 3000);
      else if (req.url === '/boom') res.writeHead(502).end();
      else if (req.url === '/missing') res.writeHead(404).end();
      else res.end('ok');
    });
    allowPublic = new AddressAllowList([`127.0.0.1:${publicServer.port}`, 'public.test']);
  });

  afterAll(async () => {
    await canary.close();
    await publicServer.close();
  });

  afterEach(() => {
    expect(canary.requests).toEqual([]);
  });

  it('refuses 127.0.0.1', async () => {
    const err = await refusal(`${canary.url}/x`);
    expect(err.code).toBe('validation_failed');
    expect(err.message).toBe(`the input URL's host "127.0.0.1" is 127.0.0.1, a loopback address; the service fetches only public addresses`);
  });

  it('refuses [::1]', async () => {
    const err = await refusal(`http://[::1]:${canary.port}/x`);
    expect(err.code).toBe('validation_failed');
    expect(err.message).toContain('is ::1, a loopback address');
  });

  it('refuses IPv4-mapped IPv6 loopback', async () => {
    expect((await refusal(`http://[::ffff:127.0.0.1]:${canary.port}/x`)).message).toContain('a loopback address');
  });

  it('refuses 10.0.0.1 and the metadata address without connecting', async () => {
    expect((await refusal('http://10.0.0.1/')).message).toContain('is 10.0.0.1, a private address');
    const metadata = await refusal('http://169.254.169.254/latest/meta-data/');
    expect(metadata.code).toBe('validation_failed');
    expect(metadata.message).toContain('169.254.169.254, a cloud metadata address');
    expect((await refusal('http://[fd00:ec2::254]/')).message).toContain('a cloud metadata address');
  });

  it('refuses a host name that resolves to loopback', async () => {
    const err = await refusal(`http://evil.test:${canary.port}/x`, { resolve: toLoopback });
    expect(err.message).toBe(`the input URL's host "evil.test" resolves to 127.0.0.1, a loopback address; the service fetches only public addresses`);
  });

  it('refuses localhost through the system resolver', async () => {
    const err = await refusal(`http://localhost:${canary.port}/x`);
    expect(err.code).toBe('validation_failed');
    expect(err.message).toMatch(/"localhost" resolves to (127\.0\.0\.1|::1), a loopback address/);
  });

  it('refuses a host name when any of its addresses is private', async () => {
    const mixed: Resolver = async () => [{ address: '93.184.216.34', family: 4 }, { address: '192.168.0.10', family: 4 }];
    expect((await refusal('http://mixed.test/', { resolve: mixed })).message).toContain('resolves to 192.168.0.10, a private address');
  });

  it('refuses a redirect from an allowed server to the canary', async () => {
    const err = await refusal(`${publicServer.url}/to-canary`, { allow: allowPublic });
    expect(err.code).toBe('validation_failed');
    expect(err.message).toBe(`the input URL's redirect 1 (host "127.0.0.1") is 127.0.0.1, a loopback address; the service fetches only public addresses`);
    expect(publicServer.requests.at(-1)?.url).toBe('/to-canary');
  });

  it('refuses redirects to the metadata address and to other schemes', async () => {
    expect((await refusal(`${publicServer.url}/to-metadata`, { allow: allowPublic })).message).toContain('redirect 1 (host "169.254.169.254") is 169.254.169.254, a cloud metadata address');
    expect((await refusal(`${publicServer.url}/to-file`, { allow: allowPublic })).message).toContain(`redirect 1 uses "file"`);
    const invalid = await refusal(`${publicServer.url}/to-invalid`, { allow: allowPublic });
    expect(invalid.code).toBe('validation_failed');
    expect(invalid.message).toBe(`the input URL's redirect 1 is not a valid URL`);
  });

  it('refuses non-http schemes and credentials', async () => {
    for (const url of ['file:///etc/passwd', 'ftp://example.com/x', 'gopher://127.0.0.1:70/', 'data:text/plain,hi']) {
      expect((await refusal(url)).message).toContain('only http and https');
    }
    expect((await refusal(`http://user:pw@127.0.0.1:${canary.port}/`, { allow: new AddressAllowList(['127.0.0.0/8']) })).message).toContain('user name or password');
  });

  it('fetches from an allowed address, typing the bytes by their content', async () => {
    const png = await safeFetch(`${publicServer.url}/png`, { ...LIMITS, allow: allowPublic });
    expect(png).toEqual({ bytes: expect.any(Buffer), mimeType: 'image/png', finalUrl: `${publicServer.url}/png` });
    expect((await safeFetch(`${publicServer.url}/text`, { ...LIMITS, allow: allowPublic })).mimeType).toBe('text/plain');
    expect((await safeFetch(`${publicServer.url}/untyped`, { ...LIMITS, allow: allowPublic })).mimeType).toBe('application/octet-stream');
  });

  it('connects to the vetted address with the original Host header', async () => {
    const file = await safeFetch(`http://public.test:${publicServer.port}/text`, { ...LIMITS, allow: allowPublic, resolve: toLoopback });
    expect(file.bytes.toString()).toBe('hello');
    expect(publicServer.requests.at(-1)).toEqual({ method: 'GET', url: '/text', host: `public.test:${publicServer.port}` });
  });

  it('follows up to 3 redirects, re-checking each, and refuses a fourth', async () => {
    const followed = await safeFetch(`${publicServer.url}/hops/2`, { ...LIMITS, allow: allowPublic });
    expect(followed.finalUrl).toBe(`${publicServer.url}/png`);
    const err = await refusal(`${publicServer.url}/hops/3`, { allow: allowPublic });
    expect(err.message).toContain('redirects more than 3 times');
  });

  it('refuses bodies over the cap, declared or streamed', async () => {
    expect((await refusal(`${publicServer.url}/big-declared`, { allow: allowPublic })).message).toContain(`sends ${LIMITS.maxBytes + 1} bytes; the limit is ${LIMITS.maxBytes} bytes`);
    const streamed = await refusal(`${publicServer.url}/big-streamed`, { allow: allowPublic });
    expect(streamed.code).toBe('validation_failed');
    expect(streamed.message).toContain(`sends more than ${LIMITS.maxBytes} bytes`);
  });

  it('gives up after the time limit, and on 5xx, as unavailable; 4xx is the caller\'s', async () => {
    const slow = await refusal(`${publicServer.url}/slow`, { allow: allowPublic, timeoutMs: 300 });
    expect(slow.code).toBe('unavailable');
    expect(slow.message).toContain('took longer than 300 ms');
    expect((await refusal(`${publicServer.url}/boom`, { allow: allowPublic })).code).toBe('unavailable');
    const missing = await refusal(`${publicServer.url}/missing`, { allow: allowPublic });
    expect(missing.code).toBe('validation_failed');
    expect(missing.message).toContain('answered 404');
  });

  it('stops when the caller aborts', async () => {
    const controller = new AbortController();
    const reason = new Error('the run stopped');
    setTimeout(() => controller.abort(reason), 100);
    await expect(safeFetch(`${publicServer.url}/slow`, { ...LIMITS, allow: allowPublic, signal: controller.signal })).rejects.toBe(reason);
  });
});

describe('runs with input URLs on other hosts', () => {
  let service: TestService;
  let canary: RecordingServer;
  let assets: RecordingServer;
  let png: Buffer;

  beforeAll(async () => {
    png = await sharp({ create: { width: 120, height: 80, channels: 3, background: '#cc6633' } }).png().toBuffer();
    canary = await recordingServer();
    assets = await recordingServer((req, res) => {
      if (req.url === '/to-canary') res.writeHead(302, { location: `${canary.url}/stolen.png` }).end();
      // A wrong Content-Type: the bytes decide.
      else res.writeHead(200, { 'content-type': 'text/plain' }).end(png);
    });
    service = await startTestService({ env: { FETCH_ALLOW_PRIVATE: `127.0.0.1:${assets.port}`, STEP_RETRY_ATTEMPTS: '1' } });
  });

  afterAll(async () => {
    await service?.close();
    await canary.close();
    await assets.close();
  });

  const workflow = {
    version: 2,
    nodes: [
      { id: 'photo', uses: 'input', outputType: 'IMAGE' },
      { id: 'thumb', uses: 'image-resize', inputs: { image: '${photo.value}', width: 30, height: 20 } },
      { id: 'picture', uses: 'output', inputs: { value: '${thumb.image}' } },
    ],
  };

  async function run(ref: string): Promise<{ status: number; events: RunEvent[]; body?: unknown }> {
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ workflow, inputs: { photo: { ref } } }),
    });
    if (res.status !== 200) return { status: res.status, events: [], body: await res.json() };
    const messages = await readSse(res);
    return { status: 200, events: messages.filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent) };
  }

  it('answers 400 before the run for a ref that is not http(s)', async () => {
    const { status, body } = await run('file:///etc/passwd');
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: 'validation_failed', error: expect.stringContaining('input "photo" ref uses "file"') });
  });

  it.each([
    ['a loopback address', () => `${canary.url}/x.png`, 'is 127.0.0.1, a loopback address'],
    ['the metadata address', () => 'http://169.254.169.254/latest/meta-data/', 'a cloud metadata address'],
    ['a redirect to a loopback address', () => `${assets.url}/to-canary`, 'redirect 1 (host "127.0.0.1") is 127.0.0.1, a loopback address'],
  ])('fails the step with validation_failed for %s', async (_name, ref, reason) => {
    const { events } = await run(ref());
    expect(events.find((e) => e.type === 'step.failed')).toMatchObject({ nodeId: 'thumb', error: { code: 'validation_failed', message: expect.stringContaining(reason) } });
    expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'validation_failed' } });
    expect(canary.requests).toEqual([]);
  });

  it('fetches an allowed URL, re-hosts it, and outputs only our own blob URLs', async () => {
    const { events } = await run(`${assets.url}/photo`);
    const terminal = events.at(-1)!;
    expect(terminal.type).toBe('run.completed');
    const runId = (events[0] as { runId: string }).runId;
    const picture = (terminal as { outputs: Record<string, { ref: string; mimeType: string }> }).outputs.picture!;
    expect(picture.ref.startsWith(`${service.config.publicBaseUrl}/blobs/runs/${runId}/`)).toBe(true);
    expect(picture.mimeType).toBe('image/png');
    // The fetched input is stored under the run too, recorded for the retention sweeper.
    const stored = await service.prisma.artifact.findMany({ where: { runId } });
    expect(stored.map((a) => a.mimeType).sort()).toEqual(['image/png', 'image/png']);
    expect(stored.some((a) => (a.metadata as { sourceHost?: string }).sourceHost === `127.0.0.1:${assets.port}`)).toBe(true);
    expect(assets.requests.filter((r) => r.url === '/photo')).toHaveLength(1);
    expect(canary.requests).toEqual([]);
  });

  async function passThrough(ref: string): Promise<RunEvent[]> {
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ workflow: { version: 2, nodes: [{ id: 'photo', uses: 'input', outputType: 'IMAGE' }, { id: 'same', uses: 'output', inputs: { value: '${photo.value}' } }] }, inputs: { photo: { ref } } }),
    });
    expect(res.status).toBe(200);
    return (await readSse(res)).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
  }

  it('re-hosts an input wired straight to an output, so outputs point only at our storage', async () => {
    const events = await passThrough(`${assets.url}/straight`);
    const terminal = events.at(-1) as { type: string; outputs: Record<string, { kind: string; ref: string; mimeType: string }> };
    expect(terminal.type).toBe('run.completed');
    const runId = (events[0] as { runId: string }).runId;
    expect(terminal.outputs.same).toMatchObject({ kind: 'image', mimeType: 'image/png' });
    expect(terminal.outputs.same!.ref.startsWith(`${service.config.publicBaseUrl}/blobs/runs/${runId}/`)).toBe(true);
    expect(JSON.stringify(terminal.outputs)).not.toContain(assets.url);
    const bytes = Buffer.from(await (await fetch(terminal.outputs.same!.ref)).arrayBuffer());
    expect(bytes.equals(png)).toBe(true);
    // The record holds the same, re-hosted outputs.
    const record = (await (await fetch(`${service.url}/v1/runs/${runId}`, { headers: bearer(service.account.token) })).json()) as { outputs: unknown };
    expect(record.outputs).toEqual(terminal.outputs);
  });

  it('fails a run whose pass-through input may not be fetched, and the canary receives nothing', async () => {
    const events = await passThrough(`${canary.url}/pass.png`);
    expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'validation_failed', message: expect.stringContaining('an output could not be stored') } });
    expect(canary.requests).toEqual([]);
  });
});
