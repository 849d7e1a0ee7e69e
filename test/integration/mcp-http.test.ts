import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TOOL_OPS, toolName } from '../../services/mcp';
import { listen, type RunningServer } from '../../services/api';
import { seedAccount } from '../support/fixtures';
import { mcpToolBehaviours } from '../support/mcp-behaviours';
import { recordWireProgress, TWO_ADDS, runRecordWhenDone, toolJson, type WireProgress } from '../support/mcp-client';
import { startTestService, type TestService } from '../support/service';
import { failingNode, pauseChain, pauseNode } from '../support/test-nodes';

/** Headers of a raw POST to /mcp as `token`. */
function mcpHeaders(token: string): Record<string, string> {
  return { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` };
}

/**
 * Posts one `runs_create` call with a progress token and reads its SSE answer to the end:
 * `runId` resolves at the run's `run.started` progress, `answer` when the HTTP answer ends.
 */
function rawRunsCreate(base: string, token: string, id: number, workflow: unknown) {
  let resolveRunId!: (runId: string) => void;
  const runId = new Promise<string>((resolve) => (resolveRunId = resolve));
  const answer = (async () => {
    const body = { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'runs_create', arguments: { workflow }, _meta: { progressToken: id } } };
    const response = await fetch(`${base}/mcp`, { method: 'POST', headers: mcpHeaders(token), body: JSON.stringify(body) });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += decoder.decode(chunk.value, { stream: true });
      const started = /run\.started ([0-9a-f-]{36})/.exec(text);
      if (started) resolveRunId(started[1]!);
    }
    return { text };
  })();
  return { runId, answer };
}

/** Posts a raw `notifications/cancelled` for request `id` as `token`; resolves to the HTTP status. */
async function postCancel(base: string, token: string, id: number): Promise<number> {
  const body = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } };
  const response = await fetch(`${base}/mcp`, { method: 'POST', headers: mcpHeaders(token), body: JSON.stringify(body) });
  await response.text();
  return response.status;
}

/** The hosted MCP server at /mcp: streamable HTTP, stateless, over the API's in-process invoke. */
describe('the hosted MCP server over streamable HTTP', () => {
  let service: TestService;
  let client: Client;
  const wires = new Map<Client, WireProgress[]>();
  const opened: Client[] = [];

  /** A client of `url` acting with `token`; `fetch` may route its requests elsewhere. */
  async function connect(token: string, url = `${service.url}/mcp`, fetchVia?: typeof fetch): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } }, ...(fetchVia ? { fetch: fetchVia } : {}) });
    const connected = new Client({ name: 'mcp-http-test', version: '1.0.0' });
    await connected.connect(transport);
    wires.set(connected, recordWireProgress(transport));
    opened.push(connected);
    return connected;
  }

  beforeAll(async () => {
    service = await startTestService({ nodes: [pauseNode, failingNode] });
    client = await connect(service.account.token);
  });

  afterAll(async () => {
    for (const c of opened) await c.close().catch(() => undefined);
    await service?.close();
  });

  mcpToolBehaviours(() => ({
    service,
    client,
    wireProgress: wires.get(client)!,
    name: (op) => toolName(op, 'hosted'),
    readOnlyClient: async () => connect((await seedAccount(service.prisma, { slug: 'reader', scopes: ['read'], balanceMicros: 1_000_000 })).token),
  }));

  it('answers 401 without a usable token, naming the OAuth protected resource metadata', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const metadata = `resource_metadata="${service.url}/.well-known/oauth-protected-resource"`;
    const anonymous = await fetch(`${service.url}/mcp`, { method: 'POST', headers, body });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe(`Bearer ${metadata}`);
    const unknown = await fetch(`${service.url}/mcp`, { method: 'POST', headers: { ...headers, authorization: 'Bearer svc_nonsense' }, body });
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get('www-authenticate')).toBe(`Bearer error="invalid_token", ${metadata}`);
    expect(((await unknown.json()) as { error: string }).error).toContain('malformed');
  });

  it('serves under /api too, and refuses other methods than POST (no sessions)', async () => {
    const viaApi = await connect(service.account.token, `${service.url}/api/mcp`);
    expect((await viaApi.listTools()).tools).toHaveLength(TOOL_OPS.length);
    const get = await fetch(`${service.url}/mcp`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${service.account.token}` } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it("serves one client's requests from two API processes (stateless: no session to find)", async () => {
    const second = await service.extra({ ROLE: 'api' });
    const secondServer: RunningServer = await listen(second.app!, '127.0.0.1', 0);
    try {
      const bases = [service.url, secondServer.url];
      const served: string[] = [];
      let next = 0;
      // Each request of the one client goes to the other process than the one before.
      const alternate: typeof fetch = (input, init) => {
        const base = bases[next++ % 2]!;
        served.push(base);
        const url = new URL(input instanceof Request ? input.url : String(input));
        return fetch(`${base}${url.pathname}`, init);
      };
      const roaming = await connect(service.account.token, `${service.url}/mcp`, alternate);
      expect((await roaming.listTools()).tools.map((t) => t.name)).toContain('runs_create');
      expect(toolJson(await roaming.callTool({ name: 'runs_create', arguments: { workflow: TWO_ADDS } }))).toEqual({ outputs: { out: { kind: 'float', value: 3 } } });
      expect(toolJson(await roaming.callTool({ name: 'nodes_get', arguments: { id: 'math-add' } })).id).toBe('math-add');
      expect(new Set(served)).toEqual(new Set(bases));
    } finally {
      await secondServer.close(0);
    }
  });

  it("cancels a call on one API process from a notification posted to another, only for the call's own caller", async () => {
    const second = await service.extra({ ROLE: 'api' });
    const secondServer: RunningServer = await listen(second.app!, '127.0.0.1', 0);
    try {
      const owner = service.account.token;
      const other = (await seedAccount(service.prisma, { slug: 'stranger', scopes: ['read', 'run'], balanceMicros: 1_000_000 })).token;

      // Another caller's cancellation of the same request id is published but cancels nothing.
      const kept = rawRunsCreate(service.url, owner, 7, pauseChain(1, 1500));
      await kept.runId;
      expect(await postCancel(secondServer.url, other, 7)).toBe(202);
      const keptAnswer = await kept.answer;
      // A cancelled call gets no answer: this one got its result.
      expect(keptAnswer.text).toContain('"result"');
      expect(keptAnswer.text).toContain('\\"value\\":1');

      // The caller's own cancellation, posted to the other process, ends the call while its run
      // goes on (read from the run's record, not from a clock).
      const cancelled = rawRunsCreate(service.url, owner, 7, pauseChain(1, 8000));
      const runId = await cancelled.runId;
      expect(await postCancel(secondServer.url, owner, 7)).toBe(202);
      const answer = await cancelled.answer;
      expect(await service.prisma.run.findUnique({ where: { id: runId }, select: { status: true } })).toEqual({ status: 'running' });
      // As on stdio, a cancelled call gets no answer (MCP: the receiver SHOULD NOT respond).
      expect(answer.text).not.toContain('"result"');
      expect(answer.text).not.toContain('"error"');
      // Following stopped; the run itself went on to its end.
      expect(await runRecordWhenDone(service, runId)).toMatchObject({ status: 'completed', outputs: { out: { value: 1 } } });
    } finally {
      await secondServer.close(0);
    }
  });
});
