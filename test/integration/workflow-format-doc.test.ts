import fs from 'node:fs';
import path from 'node:path';
import { ArtifactInputSchema, validate, type RunEvent } from '../../services/contract';
import { bearer, publishWorkflow, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';

/**
 * docs/workflow-format.md, example by example, against a real service: runs its run bodies and
 * compares their last event with the block after each, publishes the definitions it says are
 * published, checks its artifacts against the contract. The rules are the page's own last section.
 */

const DOC = path.resolve(__dirname, '../../docs/workflow-format.md');
const PUBLISHED = /<!--\s*published as acme\/([a-z0-9-]+)\s*-->\s*$/;

interface Block {
  /** 1-based line of the opening fence, for failure messages. */
  line: number;
  json: unknown;
  /** The slug a `<!-- published as acme/<slug> -->` line just above the block names. */
  publishedAs?: string;
}

function jsonBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const fence = /```json\n([\s\S]*?)\n```/g;
  for (let m = fence.exec(markdown); m; m = fence.exec(markdown)) {
    const before = markdown.slice(0, m.index);
    const line = before.split('\n').length;
    const publishedAs = PUBLISHED.exec(before)?.[1];
    blocks.push({ line, json: JSON.parse(m[1]!), ...(publishedAs ? { publishedAs } : {}) });
  }
  return blocks;
}

const has = (value: unknown, key: string) => typeof value === 'object' && value !== null && !Array.isArray(value) && key in value;

describe('docs/workflow-format.md: every example, for real', () => {
  let service: TestService;
  const blocks = jsonBlocks(fs.readFileSync(DOC, 'utf8'));

  beforeAll(async () => {
    service = await startTestService();
  });

  afterAll(async () => {
    await service?.close();
  });

  const headers = () => ({ ...bearer(service.account.token), 'Content-Type': 'application/json' });
  /** `acme` in the page is the test's organization. */
  const ours = (value: unknown): unknown => JSON.parse(JSON.stringify(value).replace(/"acme\//g, `"${service.account.orgSlug}/`));

  async function lastEvent(body: unknown): Promise<RunEvent> {
    const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: headers(), body: JSON.stringify(ours(body)) });
    expect({ status: res.status, body: res.status === 200 ? null : await res.json() }).toEqual({ status: 200, body: null });
    const messages = await readSse(res);
    expect(messages.at(-1)?.data).toBe('[DONE]');
    return JSON.parse(messages.at(-2)!.data) as RunEvent;
  }

  it('has examples of every kind the page promises', () => {
    expect(blocks.filter((b) => has(b.json, 'workflow')).length).toBeGreaterThanOrEqual(3);
    expect(blocks.some((b) => has(b.json, 'workflowRef'))).toBe(true);
    expect(blocks.some((b) => b.publishedAs)).toBe(true);
    expect(blocks.some((b) => has(b.json, 'ref'))).toBe(true);
  });

  it('runs, publishes and checks each example in order, with the outputs the page shows', async () => {
    for (let i = 0; i < blocks.length; i++) {
      const block = blocks[i]!;
      const where = `the json block at docs/workflow-format.md:${block.line}`;
      if (has(block.json, 'workflow') || has(block.json, 'workflowRef')) {
        const expected = blocks[++i];
        if (!expected || !has(expected.json, 'type')) throw new Error(`${where} is a run; the block after it must be the event its stream ends with`);
        expect({ where, event: await lastEvent(block.json) }).toEqual({ where, event: expected.json });
      } else if (has(block.json, 'nodes')) {
        if (!block.publishedAs) throw new Error(`${where} is a definition without a "<!-- published as acme/<slug> -->" line above it`);
        await publishWorkflow(service, block.publishedAs, ours(block.json));
      } else if (has(block.json, 'value') || has(block.json, 'ref')) {
        const checked = validate(ArtifactInputSchema, block.json);
        expect({ where, problems: checked.ok ? null : checked.message }).toEqual({ where, problems: null });
      } else {
        throw new Error(`${where} is none of the shapes the page's last section lists`);
      }
    }
  });
});
