import { jsonCall } from '../support/json-api';
import { startTestService, type TestService } from '../support/service';

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
