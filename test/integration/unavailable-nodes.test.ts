import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually } from '../support/eventually';
import { jsonCall } from '../support/json-api';
import { freePorts } from '../support/local-servers';
import { startTestService, type TestService } from '../support/service';
import { exited } from '../support/worker-process';

/**
 * Nodes that exist but that this server does not offer (here the OpenAI nodes: no OPENAI_API_KEY)
 * stay out of the catalog, and a caller naming one is told what enables it instead of "no such node".
 */
describe('nodes this server knows of but does not offer', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ env: { OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' } });
  });
  afterAll(async () => service?.close());

  const chat = {
    version: 2,
    nodes: [
      { id: 'prompt', uses: 'input', outputType: 'TEXT', inputs: { default: 'hello' } },
      { id: 'ask', uses: 'openai-chat', inputs: { prompt: '${prompt.value}' } },
      { id: 'answer', uses: 'output', inputs: { value: '${ask.text}' } },
    ],
  };

  it('leaves them out of nodes.list', async () => {
    const listed = await jsonCall(service.url, 'GET', '/v1/nodes', undefined, null);
    expect(listed.status).toBe(200);
    const ids = (listed.body as { id: string }[]).map((spec) => spec.id);
    expect(ids).toContain('math-add');
    expect(ids).not.toContain('openai-chat');
  });

  it('refuses a run naming one with a 400 that says what enables it, and charges nothing', async () => {
    const before = await service.prisma.organization.findUniqueOrThrow({ where: { id: service.account.orgId } });
    const runsBefore = await service.prisma.run.count({ where: { orgId: service.account.orgId } });
    const refused = await jsonCall(service.url, 'POST', '/v1/runs', { workflow: chat }, service.account.token);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain('nodes[1] "ask": node "openai-chat" exists but is not enabled on this server: set OPENAI_API_KEY');
    expect(refused.body.error).not.toContain('names no known node');
    const after = await service.prisma.organization.findUniqueOrThrow({ where: { id: service.account.orgId } });
    expect(after.balanceMicros).toBe(before.balanceMicros);
    expect(await service.prisma.run.count({ where: { orgId: service.account.orgId } })).toBe(runsBefore);
  });

  it('still answers a node nobody knows as unknown', async () => {
    const unknown = { ...chat, nodes: chat.nodes.map((node) => (node.id === 'ask' ? { ...node, uses: 'openai-chatt' } : node)) };
    const refused = await jsonCall(service.url, 'POST', '/v1/runs', { workflow: unknown }, service.account.token);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain('"uses" names no known node "openai-chatt"');
  });

  it('answers nodes.get of one with a 404 saying it is not enabled here and what enables it', async () => {
    const answer = await jsonCall(service.url, 'GET', '/v1/nodes/anthropic-messages', undefined, null);
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ code: 'not_found', error: 'node "anthropic-messages" exists but is not enabled on this server: set ANTHROPIC_API_KEY' });
  });
});

/**
 * A server on a machine without the local programs (a real process whose PATH has none of them):
 * a workflow naming a tool node is told the node exists, is not installed here, and what installs it.
 */
describe('a server without the local programs', () => {
  let service: TestService;
  let child: ChildProcess | undefined;
  let url = '';

  beforeAll(async () => {
    service = await startTestService();
    const [port] = await freePorts(1);
    const emptyPath = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-no-tools-'));
    child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, '../../workers/serve.ts')], {
      cwd: path.join(__dirname, '../..'),
      env: { ...process.env, ...service.env, ROLE: 'api', PORT: String(port), PATH: emptyPath },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    url = `http://127.0.0.1:${port}`;
    await eventually(async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.ok === true, { timeoutMs: 60_000, what: 'the process to be ready' });
  }, 90_000);

  afterAll(async () => {
    child?.kill('SIGTERM');
    if (child) await exited(child);
    await service?.close();
  });

  it('leaves speech-espeak out of nodes.list and refuses a run naming it with what installs it', async () => {
    const listed = (await (await fetch(`${url}/v1/nodes`)).json()) as { id: string }[];
    expect(listed.map((spec) => spec.id)).not.toContain('speech-espeak');
    const workflow = { version: 2, nodes: [{ id: 'speak', uses: 'speech-espeak', inputs: { text: 'hello' } }, { id: 'audio', uses: 'output', inputs: { value: '${speak.audio}' } }] };
    const refused = await jsonCall(url, 'POST', '/v1/runs', { workflow }, service.account.token);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('nodes[0] "speak": node "speech-espeak" exists but is not installed on this server: install espeak-ng (make system-deps, or apt-get install espeak-ng)');
  });
});
