import path from 'node:path';
import { loadConfig } from '../../services/platform/config';
import type { Logger } from '../../services/platform/logger';
import { configuredNodes } from '../../services/nodes/configured-nodes';

const CURATED = path.join(__dirname, '../../catalog/hosted-models.yaml');
const BASE_ENV = { DATABASE_URL: 'postgresql://svc@127.0.0.1:9/svc', REDIS_URL: 'redis://127.0.0.1:9', BLOB_SIGNING_SECRET: 'test-signing-secret-0123456789abcdef' };

function logger(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = { info: (message: string) => lines.push(message), warn: () => undefined, error: () => undefined, debug: () => undefined } as unknown as Logger;
  return { log, lines };
}

describe('configuredNodes with catalog files', () => {
  it('offers the entries whose key is set, names the others with the reason once, and gives every entry by id', async () => {
    const config = loadConfig({ ...BASE_ENV, NODE_CATALOG_FILES: CURATED, FAL_KEY: 'fal-key-0123456789' });
    const { log, lines } = logger();
    const { nodes, unavailable, entries } = await configuredNodes(config, log, {});
    const ids = nodes.map((n) => n.spec.id);
    expect(ids).toEqual(expect.arrayContaining(['fal-image', 'fal-flux-schnell', 'fal-kokoro-tts']));
    expect(ids).not.toContain('replicate-flux-schnell');
    expect(unavailable).toEqual(expect.arrayContaining([
      { id: 'replicate-flux-schnell', reason: 'set REPLICATE_API_TOKEN' },
      { id: 'replicate-image', reason: 'set REPLICATE_API_TOKEN' },
      { id: 'openrouter-llama-3-3-70b', reason: 'set OPENROUTER_API_KEY' },
      { id: 'openai-chat', reason: 'set OPENAI_API_KEY' },
    ]));
    expect([...entries.keys()]).toContain('replicate-llama-3-8b');
    expect(entries.get('fal-flux-schnell')).toMatchObject({ provider: 'fal', model: 'fal-ai/flux/schnell' });
    // One line a reason, naming every node it leaves out.
    expect(lines.filter((line) => line.endsWith('left out of the catalog: set REPLICATE_API_TOKEN'))).toEqual([expect.stringContaining('replicate-image, replicate-flux-schnell, replicate-real-esrgan, replicate-llama-3-8b left out of the catalog')]);
    expect(nodes.find((n) => n.spec.id === 'fal-flux-schnell')!.revision).toMatch(/^[0-9a-f]{64}$/);
  });

  it('offers none with NODE_CATALOG_FILES=none', async () => {
    const config = loadConfig({ ...BASE_ENV, NODE_CATALOG_FILES: 'none', FAL_KEY: 'fal-key-0123456789' });
    const { nodes, entries } = await configuredNodes(config, logger().log, {});
    expect(nodes.map((n) => n.spec.id)).not.toContain('fal-flux-schnell');
    expect(entries.size).toBe(0);
  });
});
