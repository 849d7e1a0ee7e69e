import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { catalogNode, CatalogFileError, checkNodeInputs, mediaProviderNodes, readCatalogFile, type CatalogEntry, type ProviderConnections } from '../../services/nodes';
import { catalogEntriesOf } from '../../services/nodes/configured-nodes';
import { parsePriceFormula } from '../../services/nodes/catalog-file';

/** Catalog files (docs/providers.md): what a bad one is refused with, price formulas, and the nodes entries make. */

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-catalog-unit-'));
let n = 0;
function fileOf(nodes: unknown): string {
  const file = path.join(dir, `catalog-${(n += 1)}.yaml`);
  fs.writeFileSync(file, typeof nodes === 'string' ? nodes : stringify({ nodes }));
  return file;
}

const flux = (): Record<string, unknown> => ({
  id: 'my-flux',
  provider: 'fal',
  model: 'fal-ai/flux/schnell',
  title: 'FLUX',
  category: 'image',
  description: 'Text to image.',
  example: { prompt: 'a fox' },
  inputs: { prompt: { type: 'TEXT', maxLength: 100 }, num_images: { type: 'INT', default: 1, min: 1, max: 4 } },
  outputs: { images: { type: 'IMAGE', array: true, from: 'images', item: 'url' } },
  price: { estimate: '3000 * num_images', actual: '3000 * images' },
});

const chat = (): Record<string, unknown> => ({
  id: 'my-chat',
  provider: 'openai-chat',
  model: 'llama3',
  baseUrl: 'http://127.0.0.1:11434/v1',
  apiKeyEnv: 'OLLAMA_KEY',
  title: 'Llama',
  category: 'llm',
  description: 'Chat.',
  vision: true,
  price: { estimate: 'input_tokens * 0.1 + output_tokens * 0.2', actual: 'input_tokens * 0.1 + output_tokens * 0.2' },
});

const refusal = (nodes: unknown): string => {
  const file = fileOf(nodes);
  try {
    readCatalogFile(file);
  } catch (err) {
    expect(err).toBeInstanceOf(CatalogFileError);
    return (err as Error).message.replace(file, 'FILE');
  }
  throw new Error('the file was accepted');
};

describe('readCatalogFile', () => {
  it('reads good entries as they are written', () => {
    const entries = readCatalogFile(fileOf([flux(), chat()]));
    expect(entries).toEqual([flux(), chat()]);
  });

  it('names the file, the entry and the field of what is wrong', () => {
    expect(refusal([flux(), chat(), { ...flux(), id: 'fal-flux-schnell', price: { estimate: '3000 * num_imgs', actual: '3000' } }])).toBe(
      'FILE: entry 3 ("fal-flux-schnell"): price.estimate: unknown variable "num_imgs"; it may use "prompt", "num_images"',
    );
    expect(refusal([{ ...flux(), price: undefined }])).toBe('FILE: entry 1 ("my-flux"): price: is required');
    expect(refusal([{ ...flux(), inputs: { prompt: { type: 'TXT' } } }])).toMatch(/^FILE: entry 1 \("my-flux"\): inputs\.prompt\.type: must be one of "TEXT", /);
    expect(refusal([{ ...flux(), provider: 'fall' }])).toMatch(/^FILE: entry 1 \("my-flux"\): provider: must be one of "fal", "replicate", "openai-images", "openai-speech", "openai-transcribe", "openai-embeddings", "openai-chat", "anthropic"$/);
    expect(refusal([{ ...flux(), colour: 'red' }])).toBe('FILE: entry 1 ("my-flux"): colour: is not a field of a catalog entry here (misspelt?)');
    expect(refusal([{ ...flux(), price: { estimate: 'eval("1")', actual: '1' } }])).toMatch(/^FILE: entry 1 \("my-flux"\): price\.estimate: unknown function "eval"/);
    expect(refusal([{ ...flux(), price: { estimate: 'process.exit(1)', actual: '1' } }])).toMatch(/^FILE: entry 1 \("my-flux"\): price\.estimate: unknown function/);
    expect(refusal([{ ...flux(), price: { estimate: '3000 *', actual: '1' } }])).toMatch(/^FILE: entry 1 \("my-flux"\): price\.estimate: does not parse: /);
    expect(refusal([{ ...flux(), price: { estimate: '1', actual: 'seconds * 2' } }])).toMatch(/^FILE: entry 1 \("my-flux"\): price\.actual: unknown variable "seconds"/);
    expect(refusal([{ ...flux(), request: { fields: { image_url: 'image' } } }])).toBe('FILE: entry 1 ("my-flux"): request.fields.image_url: names "image", which is not an input port of the entry');
    expect(refusal([{ ...flux(), outputs: { images: { type: 'IMAGE', from: 'images[' } } }])).toMatch(/^FILE: entry 1 \("my-flux"\): outputs\.images\.from: "images\[" /);
    expect(refusal([{ ...flux(), example: { promt: 'x' } }])).toBe('FILE: entry 1 ("my-flux"): example.promt: is not an input port of the entry (prompt, num_images)');
    expect(refusal([{ ...flux(), example: { prompt: 'x'.repeat(101) } }])).toBe('FILE: entry 1 ("my-flux"): example.prompt: must be a TEXT of at most 100 characters, got 101');
    expect(refusal([{ ...flux(), inputs: { prompt: { type: 'TEXT' }, num_images: { type: 'INT', default: 9, max: 4 } } }])).toMatch(/^FILE: entry 1 \("my-flux"\): inputs\.num_images\.default: must be an INT/);
    expect(refusal([flux(), flux()])).toBe('FILE: entry 2 ("my-flux"): id: "my-flux" is given to an earlier entry of this file too');
    expect(refusal([{ ...chat(), baseUrl: 'ftp://x' }])).toMatch(/^FILE: entry 1 \("my-chat"\): baseUrl: must match pattern/);
    expect(refusal([{ ...flux(), baseUrl: 'https://example.com/v1' }])).toBe('FILE: entry 1 ("my-flux"): baseUrl: is for OpenAI-compatible entries; fal entries use the configured base URL');
    expect(refusal([{ ...flux(), outputs: { usage: { type: 'STRUCTURED', from: 'x' } } }])).toMatch(/^FILE: entry 1 \("my-flux"\): outputs\.usage: is the name of the output every catalog node adds/);
    expect(refusal({ nodes: 'x' } as unknown as unknown[])).toMatch(/^FILE: /);
    expect(refusal('nodes: [\n  - id: a\n  bad')).toMatch(/^FILE: is not valid YAML: /);
  });

  it('refuses an id that a node written in code or an earlier file has', () => {
    expect(() => catalogEntriesOf([fileOf([{ ...flux(), id: 'fal-image' }])])).toThrow(/entry 1 \("fal-image"\): id: "fal-image" is the id of a node written in code/);
    expect(() => catalogEntriesOf([fileOf([flux()]), fileOf([flux()])])).toThrow(/entry 1 \("my-flux"\): id: "my-flux" is the id of an entry of an earlier catalog file/);
  });

  it('accepts the curated catalog as shipped', () => {
    const entries = catalogEntriesOf([path.join(__dirname, '../../catalog/hosted-models.yaml')]);
    expect(entries.size).toBeGreaterThanOrEqual(10);
  });
});

describe('price formulas', () => {
  it('compute with numbers, texts and the listed functions only', () => {
    expect(parsePriceFormula('3000 * n + (d == "10" ? 5 : 1)').evaluate({ n: 2, d: '10' })).toBe(6005);
    expect(parsePriceFormula('ceil(len(p) / 3) + max(1, x) + min(a, b)').evaluate({ p: 'abcd', x: null, a: 4, b: 3 })).toBe(2 + 1 + 3);
    expect(parsePriceFormula('tokens(p) * 2').evaluate({ p: 'abcdef' })).toBe(4);
    expect([...parsePriceFormula('a * b + len(c)').variables]).toEqual(['a', 'b', 'c']);
    for (const text of ['a.b', 'a[0]', 'this', 'x = 1', '[1, 2]', 'constructor("x")']) expect(() => parsePriceFormula(text)).toThrow();
    expect(() => parsePriceFormula('p * 2').evaluate({ p: 'text' })).toThrow(/is not a number/);
  });
});

const connections: ProviderConnections = {
  falKey: 'fal-key', falBaseUrl: 'http://127.0.0.1:9', replicateApiToken: '', replicateBaseUrl: 'http://127.0.0.1:9',
  openaiApiKey: '', openaiBaseUrl: 'http://127.0.0.1:9/v1', anthropicApiKey: '', anthropicBaseUrl: 'http://127.0.0.1:9',
  providerTimeoutMs: 5000, providerPollMs: 10, env: { OLLAMA_KEY: 'k' },
};

describe('catalogNode', () => {
  it('makes the node the entry describes, priced by its formulas, with a revision of the whole entry', () => {
    const node = catalogNode(flux() as unknown as CatalogEntry, connections);
    if ('missing' in node) throw new Error(node.missing);
    expect(node.spec).toMatchObject({ id: 'my-flux', kind: 'model', example: { prompt: 'a fox' }, inputs: { prompt: { connector: { id: 'TEXT', maxLength: 100, isOptional: false } } } });
    expect(Object.keys(node.spec.outputs)).toEqual(['images', 'usage']);
    expect(node.estimate({ prompt: 'x', num_images: 3 })).toBe(9000);
    expect(node.price({ prompt: 'x', num_images: 3 }, { images: [{}, {}], usage: { megapixels: 2 } })).toBe(6000);
    expect(node.revision).toMatch(/^[0-9a-f]{64}$/);
    const same = catalogNode({ ...flux(), inputs: { num_images: { type: 'INT', default: 1, min: 1, max: 4 }, prompt: { maxLength: 100, type: 'TEXT' } } } as unknown as CatalogEntry, connections) as { revision: string };
    const dearer = catalogNode({ ...flux(), price: { estimate: '4000 * num_images', actual: '4000 * images' } } as unknown as CatalogEntry, connections) as { revision: string };
    expect(same.revision).toBe(node.revision);
    expect(dearer.revision).not.toBe(node.revision);
  });

  it('charges the estimate when the answer did not measure what the price reads', () => {
    const node = catalogNode({ ...flux(), provider: 'replicate', price: { estimate: '5000', actual: '10 * seconds' } } as unknown as CatalogEntry, { ...connections, replicateApiToken: 't' });
    if ('missing' in node) throw new Error(node.missing);
    expect(node.price({ prompt: 'x' }, { images: [{}], usage: { seconds: 12 } })).toBe(120);
    expect(node.price({ prompt: 'x' }, { images: [{}], usage: {} })).toBe(5000);
  });

  it('says what is missing when the provider key is not set', () => {
    expect(catalogNode({ ...flux(), provider: 'replicate' } as unknown as CatalogEntry, connections)).toEqual({ missing: 'set REPLICATE_API_TOKEN' });
    expect(catalogNode(chat() as unknown as CatalogEntry, { ...connections, env: {} })).toEqual({ missing: 'set OLLAMA_KEY' });
  });

  it('gives chat entries the chat ports, an IMAGE input with vision, and prices tokens by the formulas', () => {
    const node = catalogNode(chat() as unknown as CatalogEntry, connections);
    if ('missing' in node) throw new Error(node.missing);
    expect(node.spec.kind).toBe('llm');
    expect(Object.keys(node.spec.inputs)).toEqual(['prompt', 'system', 'model', 'temperature', 'maxTokens', 'schema', 'image']);
    expect(node.spec.inputs.model!.connector).toMatchObject({ defaultValue: 'llama3', optionValues: ['llama3'] });
    // 300 ASCII characters = 100 tokens, + 16 framing; 1000 output tokens.
    expect(node.estimate({ prompt: 'x'.repeat(300), maxTokens: 1000 })).toBe(Math.ceil(116 * 0.1 + 1000 * 0.2));
    expect(node.price({ prompt: 'x', maxTokens: 1000 }, { text: 'hi', usage: { inputTokens: 50, outputTokens: 10 } })).toBe(7);
  });
});

describe('provider text limits in the port schema', () => {
  it('openai-speech and openai-image carry OpenAI\'s limits as maxLength, checked with the inputs', () => {
    const nodes = mediaProviderNodes({
      openaiApiKey: 'k', openaiBaseUrl: 'http://127.0.0.1:9/v1', providerTimeoutMs: 5000, providerPollMs: 10,
      openaiImagePrices: { 'gpt-image-1': 1 }, openaiEmbeddingPrices: {}, openaiTtsPrices: { 'tts-1': 1 }, openaiTtsVoices: ['alloy'], openaiTranscribePrices: {},
      falKey: '', falBaseUrl: 'http://127.0.0.1:9', falApps: {}, replicateApiToken: '', replicateBaseUrl: 'http://127.0.0.1:9', replicateModels: {},
    });
    const speech = nodes.find((n) => n.spec.id === 'openai-speech')!;
    expect(speech.spec.inputs.text!.connector.maxLength).toBe(4096);
    expect(nodes.find((n) => n.spec.id === 'openai-image')!.spec.inputs.prompt!.connector.maxLength).toBe(32_000);
    expect(() => checkNodeInputs(speech.spec, { text: 'x'.repeat(4097), model: 'tts-1', voice: 'alloy', format: 'mp3' })).toThrow(/at most 4096 characters/);
  });
});
