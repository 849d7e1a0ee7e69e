import { RunEstimateSchema } from '../../services/contract';
import { seedAccount } from '../support/fixtures';
import { adder, expectValid, jsonCall } from '../support/json-api';
import { bearer, startTestService, type TestService } from '../support/service';
import { FAKE_MODEL, providerEnv } from '../faults/support/provider-fake';

/**
 * Cost estimates (docs/runs.md "Cost estimates"): `POST /v1/runs/estimate` answers each
 * node's worst case from its own pricing function (the reservation its step would make), its
 * expected cost from the organization's history, the totals and whether they fit; nothing runs.
 */

let service: TestService;
beforeAll(async () => {
  // Prices for the chat node and fal's app; no provider is ever called here.
  service = await startTestService({ env: { ...providerEnv('http://127.0.0.1:9'), FAL_KEY: 'fal-test-key-0123456789abcdef', FAL_BASE_URL: 'http://127.0.0.1:9', FAL_APPS: 'fal-ai/flux/schnell=3000' } });
}, 60_000);
afterAll(async () => service?.close());

const estimate = (body: unknown, token = service.account.token) => jsonCall(service.url, 'POST', '/v1/runs/estimate', body, token);
const node = (uses: string) => service.runtime.resources.findNode(uses)!;
const runCount = () => service.prisma.run.count({ where: { orgId: service.account.orgId } });

const chat = (prompt: string, maxTokens = 200) => ({ id: 'a', uses: 'openai-chat', inputs: { prompt, model: FAKE_MODEL, maxTokens } });

describe('POST /v1/runs/estimate', () => {
  it("answers each node's worst case from its pricing function, the totals and whether they fit; nothing is stored", async () => {
    const before = await runCount();
    const workflow = {
      version: 2,
      nodes: [
        { id: 'topic', uses: 'input', outputType: 'TEXT' },
        { id: 'a', uses: 'openai-chat', inputs: { prompt: '${topic.value}', model: FAKE_MODEL, maxTokens: 300 } },
        { id: 'img', uses: 'fal-image', inputs: { prompt: 'a lighthouse', num_images: 2 } },
        { id: 'text', uses: 'output', inputs: { value: '${a.text}' } },
        { id: 'image', uses: 'output', inputs: { value: '${img.image}' } },
      ],
    };
    const answer = await estimate({ workflow, inputs: { topic: { value: 'the sea' } }, maxCostUsd: 0.2 });
    expect(answer.status).toBe(200);
    expectValid(RunEstimateSchema, answer.body);
    // Exactly what the nodes' own estimate functions say for these inputs: what their steps will reserve.
    const chatMicros = node('openai-chat').estimate({ prompt: 'the sea', model: FAKE_MODEL, maxTokens: 300 });
    const imageMicros = node('fal-image').estimate({ prompt: 'a lighthouse', num_images: 2 });
    expect(imageMicros).toBe(6000);
    const byId = Object.fromEntries((answer.body.nodes as { nodeId: string }[]).map((n) => [n.nodeId, n]));
    expect(byId.a).toEqual({ nodeId: 'a', uses: 'openai-chat', worstCaseUsd: chatMicros / 1e6, dependsOn: [], expectedUsd: chatMicros / 1e6, expectedFrom: 'worst_case', samples: 0 });
    expect(byId.img).toMatchObject({ worstCaseUsd: 0.006, dependsOn: [], expectedFrom: 'worst_case' });
    expect(answer.body).toMatchObject({ worstCaseUsd: (chatMicros + imageMicros) / 1e6, expectedUsd: (chatMicros + imageMicros) / 1e6, maxCostUsd: 0.2, fitsCap: true, availableUsd: 100, fitsBalance: true });
    expect(await runCount()).toBe(before);

    // A cap below the worst case: does not fit.
    const tight = await estimate({ workflow, inputs: { topic: { value: 'the sea' } }, maxCostUsd: 0.001 });
    expect(tight.body).toMatchObject({ maxCostUsd: 0.001, fitsCap: false });
  });

  it("says which upstream output a step's worst case depends on, and leaves the total unknown; a price that reads no upstream value stays known", async () => {
    const workflow = {
      version: 2,
      nodes: [
        chat('Name a colour'),
        { id: 'b', uses: 'openai-chat', inputs: { prompt: '${a.text}', model: FAKE_MODEL, maxTokens: 100 } },
        { id: 'img', uses: 'fal-image', inputs: { prompt: '${a.text}' } },
        { id: 'out', uses: 'output', inputs: { value: '${b.text}' } },
        { id: 'pic', uses: 'output', inputs: { value: '${img.image}' } },
      ],
    };
    const answer = await estimate({ workflow });
    expect(answer.status).toBe(200);
    const byId = Object.fromEntries((answer.body.nodes as { nodeId: string }[]).map((n) => [n.nodeId, n]));
    // The prompt's length sets the chat's worst case: unknown until a runs.
    expect(byId.b).toMatchObject({ worstCaseUsd: null, dependsOn: ['a.text'], expectedUsd: null, expectedFrom: null });
    // fal prices per image, whatever the prompt: known now.
    expect(byId.img).toMatchObject({ worstCaseUsd: 0.003, dependsOn: [] });
    expect(answer.body).toMatchObject({ worstCaseUsd: null, expectedUsd: null, fitsCap: null, maxCostUsd: 0.5 });
  });

  it('expects what past runs of each node cost: the median of the organization’s completed steps', async () => {
    // Local nodes run for real here: their settled costs are the history.
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow: adder(i, 1) }) });
      await res.text();
    }
    const answer = await estimate({ workflow: adder(5, 5) });
    const worst = node('math-add').estimate({ a: 5, b: 5 });
    const [add] = answer.body.nodes as { expectedFrom: string; samples: number; expectedUsd: number; worstCaseUsd: number }[];
    expect(add).toMatchObject({ worstCaseUsd: worst / 1e6, expectedFrom: 'history', expectedUsd: worst / 1e6 });
    expect(add!.samples).toBeGreaterThanOrEqual(3);
  });

  it('checks the request as runs.create does, answers a broke organization fitsBalance false, and needs only the read scope', async () => {
    const invalid = await estimate({ workflow: { version: 2, nodes: [{ id: 'x', uses: 'no-such-node' }] } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toContain('no-such-node');
    const missing = await estimate({ workflowRef: `${service.account.orgSlug}/nothing@1.0.0` });
    expect(missing.status).toBe(404);
    const unknownField = await estimate({ workflow: adder(1, 1), extra: true });
    expect(unknownField.status).toBe(400);

    const broke = await seedAccount(service.prisma, { slug: 'broke-estimates', scopes: ['read'], balanceMicros: 0 });
    const poor = await estimate({ workflow: adder(1, 1) }, broke.token);
    expect(poor.status).toBe(200);
    expect(poor.body).toMatchObject({ availableUsd: 0, fitsBalance: false, fitsCap: true });
  });
});
