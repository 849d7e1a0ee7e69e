import dns from 'node:dns';
import type { NodeSpec } from '../../services/contract';
import { isDataConnector } from '../../services/engine';
import { jsonCall } from '../support/json-api';
import { recordingServer, type RecordingServer } from '../support/recording-server';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { expectFigure, figure, FULL, scale } from './support/figures';
import { LOOPBACK_NAMES, redirectTargets, shortSubset, ssrfCorpus, type SsrfCase } from './support/ssrf-corpus';

/**
 * S3: the SSRF corpus against every URL input of the service, over HTTP, through real runs.
 *
 * The URL inputs are the data ports (image, audio, video, file) of every node in the catalog,
 * found by looping over the catalog's specs: a run's input ref wired to the port is fetched by the
 * step (`safeFetch`); an input wired straight to an output is fetched to be re-hosted; and a
 * workflow's published definition has its refs fetched and copied as assets; a provider's answer
 * may link its result file anywhere (openai-image's `url`). Webhook URLs do not
 * exist yet; when they do, they belong here. A canary listening on every local address counts
 * every request: it must count none, and every attempt must fail with a clear refusal.
 */

const RUN_TIMEOUT_MS = 20_000;
const PARALLEL = 6;

/** How one attempt ended: the HTTP status before any run, or the run's terminal event. */
interface Outcome {
  target: string;
  case: SsrfCase;
  status: number;
  terminal?: string;
  code?: string;
  message?: string;
}

/** A value a required value port accepts, from its connector: default, first option, else by type. */
function valueFor(connector: NodeSpec['inputs'][string]['connector']): unknown {
  if (connector.defaultValue !== undefined) return connector.defaultValue;
  if (connector.optionValues?.length) return connector.optionValues[0];
  const scalar = { TEXT: 'x', INT: Math.max(1, connector.minValue ?? 1), FLOAT: Math.max(1, connector.minValue ?? 1), BOOLEAN: false, STRUCTURED: {}, EMBEDDING: [0] }[connector.id as string] ?? 'x';
  return connector.isArray ? [scalar] : scalar;
}

/** One workflow per fetching node: each data port fed by a run input (a literal list for list ports). */
interface Target {
  name: string;
  workflow: (url: string) => unknown;
  inputs: (url: string) => Record<string, unknown>;
}

function targetFor(spec: NodeSpec): Target {
  const ports = Object.entries(spec.inputs);
  const data = ports.filter(([, port]) => isDataConnector(port.connector.id));
  const firstOutput = Object.keys(spec.outputs)[0]!;
  return {
    name: spec.id,
    workflow: (url) => {
      const inputs: Record<string, unknown> = {};
      for (const [name, port] of ports) {
        if (isDataConnector(port.connector.id)) inputs[name] = port.connector.isArray ? [{ kind: port.connector.id.toLowerCase(), ref: url }] : `\${in_${name}.value}`;
        else if (!port.connector.isOptional) inputs[name] = valueFor(port.connector);
      }
      const sources = data.filter(([, port]) => !port.connector.isArray).map(([name, port]) => ({ id: `in_${name}`, uses: 'input', outputType: port.connector.id }));
      return { version: 2, nodes: [...sources, { id: 'target', uses: spec.id, inputs }, { id: 'out', uses: 'output', inputs: { value: `\${target.${firstOutput}}` } }] };
    },
    inputs: (url) => Object.fromEntries(data.filter(([, port]) => !port.connector.isArray).map(([name, port]) => [`in_${name}`, { kind: port.connector.id.toLowerCase(), ref: url }])),
  };
}

const passThrough: Target = {
  name: 'input wired to an output (re-hosted)',
  workflow: () => ({ version: 2, nodes: [{ id: 'photo', uses: 'input', outputType: 'IMAGE' }, { id: 'same', uses: 'output', inputs: { value: '${photo.value}' } }] }),
  inputs: (url) => ({ photo: { kind: 'image', ref: url } }),
};

async function inPool<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  }));
  return results;
}

describe('S3: SSRF corpus on every URL input', () => {
  let service: TestService;
  let canary: RecordingServer;
  let outside: RecordingServer;
  let provider: RecordingServer;
  let lookup: jest.SpyInstance;
  let resultUrls: string[] = [];

  beforeAll(async () => {
    // Every local address, both families: whatever local address a URL reaches, it is counted.
    canary = await recordingServer(undefined, '::').catch(() => recordingServer(undefined, '0.0.0.0'));
    // Stands in for an outside server (allowed at its exact port) that redirects where it is told.
    outside = await recordingServer((req, res) => {
      const to = new URL(req.url ?? '/', 'http://outside').searchParams.get('to');
      if (req.url?.startsWith('/hop?')) res.writeHead(302, { location: `/redirect?to=${encodeURIComponent(to ?? '')}` }).end();
      // Header values are bytes: unicode hosts go out percent-encoded, which the URL parser undoes.
      else if (to !== null) res.writeHead(302, { location: to.replace(/[^ -~]/gu, (c) => encodeURIComponent(c)) }).end();
      else res.writeHead(404).end();
    });
    // The provider fake: an image whose result URL is the corpus case the prompt names; 500 otherwise.
    provider = await recordingServer((req, res) => {
      if (req.method !== 'POST' || req.url !== '/v1/images/generations') return void res.writeHead(500).end();
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const url = resultUrls[Number((JSON.parse(body) as { prompt: string }).prompt)];
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ created: 1, data: [{ url }] }));
      });
    });
    // Names that resolve to loopback (and to the metadata address) through the service's own
    // resolver, dns.lookup, as a hostile DNS zone would answer; `*.localhost` as RFC 6761 says.
    const real = dns.promises.lookup.bind(dns.promises);
    lookup = jest.spyOn(dns.promises, 'lookup').mockImplementation((async (host: string, options: dns.LookupAllOptions) => {
      const name = host.toLowerCase().replace(/\.$/, '');
      const answer = LOOPBACK_NAMES[name] ?? (name.endsWith('.localhost') ? [{ address: '127.0.0.1', family: 4 }] : undefined);
      return answer ?? real(host, options);
    }) as unknown as typeof dns.promises.lookup);
    service = await startTestService({
      env: {
        FETCH_ALLOW_PRIVATE: `127.0.0.1:${outside.port}`,
        STEP_RETRY_ATTEMPTS: '1',
        FETCH_TIMEOUT_MS: '5000',
        // Provider nodes with data inputs join the catalog, against a fake that must stay unasked.
        OPENAI_API_KEY: 'sk-ssrf', OPENAI_BASE_URL: `${provider.url}/v1`,
        FAL_KEY: 'fal-ssrf', FAL_BASE_URL: provider.url,
        REPLICATE_API_TOKEN: 'r8-ssrf', REPLICATE_BASE_URL: provider.url,
        ANTHROPIC_API_KEY: 'sk-ant-ssrf', ANTHROPIC_BASE_URL: provider.url,
      },
    });
  }, 120_000);

  afterAll(async () => {
    lookup?.mockRestore();
    await service?.close();
    await Promise.all([canary?.close(), outside?.close(), provider?.close()]);
  });

  async function attempt(target: Target, c: SsrfCase): Promise<Outcome> {
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ workflow: target.workflow(c.url), inputs: target.inputs(c.url) }),
      signal: AbortSignal.timeout(RUN_TIMEOUT_MS),
    }).catch((err: unknown) => err as Error);
    if (res instanceof Error) return { target: target.name, case: c, status: 0, message: res.message };
    if (res.status !== 200) {
      const body = (await res.json().catch(() => ({}))) as { code?: string; error?: string };
      return { target: target.name, case: c, status: res.status, code: body.code, message: body.error };
    }
    const messages = await readSse(res).catch(() => []);
    const events = messages.filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as { type: string; error?: { code: string; message: string } });
    const last = events.at(-1);
    return { target: target.name, case: c, status: 200, terminal: last?.type ?? 'none (hung or cut)', code: last?.error?.code, message: last?.error?.message };
  }

  /** A clear refusal: 400 before the run, or the run failed, either with validation_failed and words. */
  const clear = (o: Outcome): boolean =>
    ((o.status === 400) || (o.status === 200 && o.terminal === 'run.failed')) && o.code === 'validation_failed' && (o.message ?? '').length > 10;

  it('refuses every corpus URL on every URL input, through real runs, and the canary counts 0 hits', async () => {
    const fetching = service.runtime.resources.catalog.list().filter((spec) => Object.values(spec.inputs).some((port) => isDataConnector(port.connector.id)));
    // The catalog must offer the image nodes at least; the loop finds the others (tools, providers).
    expect(fetching.map((spec) => spec.id)).toEqual(expect.arrayContaining(['image-resize', 'image-composite', 'openai-transcribe']));
    const corpus = ssrfCorpus(canary.port);
    const viaOutside = (cases: SsrfCase[]) => redirectTargets(cases).map((c) => ({ ...c, url: `${outside.url}/redirect?to=${encodeURIComponent(c.url)}` }));
    const redirects = viaOutside(corpus);
    const chained: SsrfCase = { name: 'two hops to loopback', url: `${outside.url}/hop?to=${encodeURIComponent(`http://127.0.0.1:${canary.port}/`)}` };
    // Short: the whole corpus and its redirects through one node, one of each idea through the others.
    const everywhere = FULL ? [...corpus, ...redirects, chained] : [...shortSubset(corpus), chained, ...viaOutside(shortSubset(corpus)).slice(0, 4)];
    const deep = [...corpus, ...redirects, chained];
    const targets = [passThrough, ...fetching.map(targetFor)];
    const work = targets.flatMap((target, i) => (i === 1 || FULL ? deep : everywhere).map((c) => ({ target, c })));
    const outcomes = await inPool(work, PARALLEL, ({ target, c }) => attempt(target, c));

    const unclear = outcomes.filter((o) => !clear(o));
    const report = unclear.slice(0, 20).map((o) => `${o.target} · ${o.case.name} (${o.case.url}): ${o.status} ${o.terminal ?? ''} ${o.code ?? ''} ${o.message ?? ''}`).join('\n');
    expectFigure('S3', 'canary hits', canary.requests.length, { max: 0 });
    expectFigure('S3', 'URL attempts tried', outcomes.length, { min: scale(200, 1000) });
    // Recorded, then failed with the first few named.
    figure('S3', 'attempts without a clear refusal (not 400/run.failed validation_failed)', unclear.length, { max: 0 });
    expect(report).toBe('');
    expect(provider.requests).toEqual([]);
    // The redirects were followed as far as the outside server, which was asked each time.
    expect(outside.requests.length).toBeGreaterThan(0);
  }, scale(180_000, 600_000));

  it('refuses to publish a workflow whose definition refers to a corpus URL, with 400', async () => {
    const corpus = ssrfCorpus(canary.port);
    const cases = FULL ? corpus : shortSubset(corpus);
    const answers = await inPool(cases, PARALLEL, async (c) => {
      const definition = { version: 2, nodes: [{ id: 'meta', uses: 'image-metadata', inputs: { image: { kind: 'image', ref: c.url } } }, { id: 'out', uses: 'output', inputs: { value: '${meta.width}' } }] };
      const created = await jsonCall(service.url, 'POST', '/editor/workflows', { name: `ssrf-${Math.random().toString(36).slice(2)}`, definition }, service.account.token);
      if (created.status !== 201) return { c, status: created.status, code: created.body?.code as string | undefined };
      const published = await jsonCall(service.url, 'POST', `/editor/workflows/${created.body.id}/publish`, { slug: `ssrf-${Math.random().toString(36).slice(2)}` }, service.account.token);
      return { c, status: published.status, code: published.body?.code as string | undefined };
    });
    const wrong = answers.filter((a) => !(a.status === 400 && a.code === 'validation_failed'));
    expectFigure('S3', 'canary hits (publishing)', canary.requests.length, { max: 0 });
    expect(wrong.map((a) => `${a.c.name}: ${a.status} ${a.code}`)).toEqual([]);
  }, 120_000);

  it('refuses result URLs a provider answers with that point at the service\'s network, as the provider\'s failure', async () => {
    const corpus = ssrfCorpus(canary.port);
    const cases = FULL ? corpus : shortSubset(corpus);
    resultUrls = cases.map((c) => c.url);
    const before = provider.requests.length;
    const workflow = (i: number) => ({ version: 2, nodes: [{ id: 'draw', uses: 'openai-image', inputs: { prompt: String(i) } }, { id: 'out', uses: 'output', inputs: { value: '${draw.image}' } }] });
    const outcomes = await inPool(cases.map((c, i) => ({ c, i })), PARALLEL, ({ c, i }) => attempt({ name: 'openai-image result URL', workflow: () => workflow(i), inputs: () => ({}) }, c));
    // Not the caller's fault: the provider's answer is what is refused, and said so: a URL the
    // address rules refuse as unavailable, one that is no http(s) URL at all as a malformed answer.
    const wrong = outcomes.filter((o) => !(o.terminal === 'run.failed' && (o.code === 'unavailable' || o.code === 'malformed_provider_response') && /result URL/.test(o.message ?? '')));
    expectFigure('S3', 'canary hits (provider result URLs)', canary.requests.length, { max: 0 });
    expect(provider.requests.length - before).toBe(cases.length);
    expect(wrong.map((o) => `${o.case.name}: ${o.status} ${o.terminal} ${o.code} ${o.message}`)).toEqual([]);
  }, 120_000);
});
