import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { CatalogFileError, PROVIDER_NAMES, PROVIDER_OF_ADAPTER, readCatalogDocument, readCatalogFile } from '../../services/nodes';
import { MEDIA_PROVIDERS, CHAT_PROVIDERS } from '../../services/nodes/catalog-file/catalog-entry';
import { catalogOf, configuredNodes, providerLimitsOf } from '../../services/nodes/configured-nodes';
import { ConfigError, loadConfig } from '../../services/platform/config';
import type { Logger } from '../../services/platform/logger';
import { mergeProviderLimits, parseProviderLimits, ProviderLimitsError } from '../../services/platform/provider-limit-settings';

/** Providers' limits: the PROVIDER_LIMITS syntax, catalog files' `limits:`, and how the two merge. */

const BASE_ENV = { DATABASE_URL: 'postgresql://svc@127.0.0.1:9/svc', REDIS_URL: 'redis://127.0.0.1:9', BLOB_SIGNING_SECRET: 'test-signing-secret-0123456789abcdef' };

/** The start failure a PROVIDER_LIMITS value gives, as the process prints it. */
function startFailure(value: string): string {
  try {
    loadConfig({ ...BASE_ENV, PROVIDER_LIMITS: value });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems.join('\n');
  }
  throw new Error('the setting was accepted');
}

describe('PROVIDER_LIMITS', () => {
  it('reads providers and models with any of their limits, a model part holding "/" and ":" included', () => {
    expect(parseProviderLimits('openai: rpm=500 tpm=200000 calls=50; anthropic/claude-sonnet-4-5: tpm=40000; fal/fal-ai/flux/schnell: calls=10 ; replicate/black-forest-labs/flux-schnell:5599ed30: rpm=60;')).toEqual([
      { key: 'openai', requestsPerMinute: 500, tokensPerMinute: 200000, concurrentCalls: 50 },
      { key: 'anthropic/claude-sonnet-4-5', tokensPerMinute: 40000 },
      { key: 'fal/fal-ai/flux/schnell', concurrentCalls: 10 },
      { key: 'replicate/black-forest-labs/flux-schnell:5599ed30', requestsPerMinute: 60 },
    ]);
  });

  it('is empty by default, and a loaded config carries what it states', () => {
    expect(loadConfig(BASE_ENV).providerLimits).toEqual([]);
    expect(loadConfig({ ...BASE_ENV, PROVIDER_LIMITS: 'fal: calls=10' }).providerLimits).toEqual([{ key: 'fal', concurrentCalls: 10 }]);
  });

  it.each([
    ['a zero limit', 'openai: rpm=500; fal: calls=0', 'PROVIDER_LIMITS entry 2 ("fal: calls=0"): calls must be a whole number from 1 to 100000, got 0'],
    ['a negative limit', 'openai: rpm=-5', 'PROVIDER_LIMITS entry 1 ("openai: rpm=-5"): rpm must be a whole number from 1 to 1000000, got -5'],
    ['a non-numeric limit', 'openai: tpm=lots', 'PROVIDER_LIMITS entry 1 ("openai: tpm=lots"): tpm must be a whole number from 1 to 1000000000, got "lots"'],
    ['an exponent', 'openai: tpm=2e5', 'PROVIDER_LIMITS entry 1 ("openai: tpm=2e5"): tpm must be a whole number from 1 to 1000000000, got "2e5"'],
    ['a fractional limit', 'openai: rpm=1.5', 'PROVIDER_LIMITS entry 1 ("openai: rpm=1.5"): rpm must be a whole number from 1 to 1000000, got 1.5'],
    ['a limit above the maximum', 'openai: rpm=5000000', 'PROVIDER_LIMITS entry 1 ("openai: rpm=5000000"): rpm must be a whole number from 1 to 1000000, got 5000000'],
    ['an empty value', 'openai: rpm=', 'PROVIDER_LIMITS entry 1 ("openai: rpm="): rpm must be a whole number from 1 to 1000000, got ""'],
    ['an unknown field', 'openai: rps=5', 'PROVIDER_LIMITS entry 1 ("openai: rps=5"): "rps" is not a limit; the limits are rpm, tpm, calls'],
    ['a field without a value', 'openai: rpm', 'PROVIDER_LIMITS entry 1 ("openai: rpm"): "rpm" must be rpm=N'],
    ['a field given twice', 'openai: rpm=5 rpm=6', 'PROVIDER_LIMITS entry 1 ("openai: rpm=5 rpm=6"): rpm is given twice'],
    ['a duplicate key', 'openai: rpm=5; fal: calls=2; openai: tpm=9', 'PROVIDER_LIMITS entry 3 ("openai: tpm=9"): "openai" is given limits by an earlier entry too; state each key once'],
    ['a missing key', ': rpm=5', 'PROVIDER_LIMITS entry 1 (": rpm=5"): the key (a provider, or provider/model) is missing'],
    ['no key and no colon', 'rpm=5', 'PROVIDER_LIMITS entry 1 ("rpm=5"): must be "provider: rpm=N tpm=N calls=N" (the key and its ":" are missing)'],
    ['an empty model', 'openai/: rpm=5', 'PROVIDER_LIMITS entry 1 ("openai/: rpm=5"): "openai/" is not a provider (lower-case letters, digits, "-") or provider/model'],
    ['a key with a space', 'open ai: rpm=5', 'PROVIDER_LIMITS entry 1 ("open ai: rpm=5"): "open ai" is not a provider (lower-case letters, digits, "-") or provider/model'],
    ['no limit', 'openai:', 'PROVIDER_LIMITS entry 1 ("openai:"): states no limit; give at least one of rpm, tpm, calls'],
  ])('stops the start on %s, naming the setting and the entry', (_case, value, message) => {
    expect(startFailure(value)).toBe(message);
  });
});

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-limits-unit-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let n = 0;
function fileOf(document: unknown): string {
  const file = path.join(dir, `catalog-${(n += 1)}.yaml`);
  fs.writeFileSync(file, typeof document === 'string' ? document : stringify(document));
  return file;
}

const refusal = (limits: unknown): string => {
  const file = fileOf({ nodes: [], limits });
  try {
    readCatalogDocument(file);
  } catch (err) {
    expect(err).toBeInstanceOf(CatalogFileError);
    return (err as Error).message.replace(file, 'FILE');
  }
  throw new Error('the file was accepted');
};

describe("a catalog file's limits", () => {
  it('are read beside the entries; readCatalogFile still gives the entries alone', () => {
    const file = fileOf('nodes: []\nlimits:\n  openai: { requestsPerMinute: 500, tokensPerMinute: 200000, concurrentCalls: 50 }\n  fal/fal-ai/flux/schnell: { concurrentCalls: 10 }\n');
    expect(readCatalogDocument(file)).toEqual({
      entries: [],
      limits: [
        { key: 'openai', requestsPerMinute: 500, tokensPerMinute: 200000, concurrentCalls: 50 },
        { key: 'fal/fal-ai/flux/schnell', concurrentCalls: 10 },
      ],
    });
    expect(readCatalogFile(file)).toEqual([]);
    expect(readCatalogDocument(fileOf({ nodes: [] })).limits).toEqual([]);
  });

  it.each([
    ['a zero limit', { openai: { requestsPerMinute: 0 } }, 'FILE: limits.openai.requestsPerMinute: must be a whole number from 1 to 1000000, got 0'],
    ['a negative limit', { fal: { concurrentCalls: -1 } }, 'FILE: limits.fal.concurrentCalls: must be a whole number from 1 to 100000, got -1'],
    ['a non-numeric limit', { openai: { tokensPerMinute: '200k' } }, 'FILE: limits.openai.tokensPerMinute: must be a whole number from 1 to 1000000000, got "200k"'],
    ['a fractional limit', { openai: { requestsPerMinute: 2.5 } }, 'FILE: limits.openai.requestsPerMinute: must be a whole number from 1 to 1000000, got 2.5'],
    ['a limit above the maximum', { openai: { concurrentCalls: 1_000_000 } }, 'FILE: limits.openai.concurrentCalls: must be a whole number from 1 to 100000, got 1000000'],
    ['an unknown field', { openai: { rpm: 5 } }, 'FILE: limits.openai.rpm: is not a limit (misspelt?); the limits are requestsPerMinute, tokensPerMinute, concurrentCalls'],
    ['no limit', { openai: {} }, 'FILE: limits.openai: states no limit; give at least one of requestsPerMinute, tokensPerMinute, concurrentCalls'],
    ['limits that are not a map', { openai: 500 }, 'FILE: limits.openai: must be a map of limits (requestsPerMinute, tokensPerMinute, concurrentCalls)'],
    ['a list for the map', [{ openai: { concurrentCalls: 1 } }], 'FILE: limits: must be a map of provider (or provider/model) to its limits'],
    ['a bad key', { 'Open AI': { concurrentCalls: 1 } }, 'FILE: limits.Open AI: "Open AI" is not a provider (lower-case letters, digits, "-") or provider/model'],
  ])('refuse %s, naming the file and the field', (_case, limits, message) => {
    expect(refusal(limits)).toBe(message);
  });

  it('refuse a key given twice (a YAML duplicate)', () => {
    const file = fileOf('nodes: []\nlimits:\n  fal: { concurrentCalls: 1 }\n  fal: { concurrentCalls: 2 }\n');
    expect(() => readCatalogDocument(file)).toThrow(new CatalogFileError(`${file}: is not valid YAML: Map keys must be unique at line 4, column 3:`));
  });
});

describe('mergeProviderLimits', () => {
  const known = ['openai', 'anthropic', 'fal'];

  it('gives the setting\'s entry for a key over a file\'s, whole, and keeps the rest of both', () => {
    const files = [
      { file: 'a.yaml', limits: [{ key: 'openai', requestsPerMinute: 500, tokensPerMinute: 200000 }, { key: 'fal', concurrentCalls: 10 }] },
      { file: 'b.yaml', limits: [{ key: 'fal', concurrentCalls: 10 }, { key: 'anthropic/claude-sonnet-4-5', tokensPerMinute: 40000 }] },
    ];
    expect(mergeProviderLimits(files, [{ key: 'openai', concurrentCalls: 5 }, { key: 'openai/gpt-4o-mini', requestsPerMinute: 90 }], known)).toEqual([
      { key: 'openai', concurrentCalls: 5 },
      { key: 'fal', concurrentCalls: 10 },
      { key: 'anthropic/claude-sonnet-4-5', tokensPerMinute: 40000 },
      { key: 'openai/gpt-4o-mini', requestsPerMinute: 90 },
    ]);
  });

  it('refuses two files stating one key differently, naming both', () => {
    const files = [
      { file: 'a.yaml', limits: [{ key: 'fal', concurrentCalls: 10 }] },
      { file: 'b.yaml', limits: [{ key: 'fal', concurrentCalls: 12 }] },
    ];
    expect(() => mergeProviderLimits(files, [], known)).toThrow(new ProviderLimitsError('b.yaml: limits.fal: differs from the limits a.yaml states for it; state them in one file, or alike in both'));
    // The setting does not excuse the files' disagreement: one of them is a mistake.
    expect(() => mergeProviderLimits(files, [{ key: 'fal', concurrentCalls: 3 }], known)).toThrow(ProviderLimitsError);
  });

  it('refuses a provider the server does not call, naming the setting or the file and listing the known ones', () => {
    expect(() => mergeProviderLimits([], [{ key: 'opnai/gpt-4o', requestsPerMinute: 5 }], known)).toThrow(
      new ProviderLimitsError('PROVIDER_LIMITS: "opnai/gpt-4o" names provider "opnai", which this server does not call; the providers are anthropic, fal, openai'),
    );
    expect(() => mergeProviderLimits([{ file: 'a.yaml', limits: [{ key: 'groq', requestsPerMinute: 5 }] }], [], known)).toThrow(
      new ProviderLimitsError('a.yaml: limits.groq: "groq" names provider "groq", which this server does not call; the providers are anthropic, fal, openai'),
    );
  });
});

describe('the provider names', () => {
  it('cover every catalog adapter, and the adapters name only known providers', () => {
    expect(Object.keys(PROVIDER_OF_ADAPTER).sort()).toEqual([...MEDIA_PROVIDERS, ...CHAT_PROVIDERS].sort());
    expect(Object.values(PROVIDER_OF_ADAPTER).filter((name) => !(PROVIDER_NAMES as readonly string[]).includes(name))).toEqual([]);
  });

  it('let the limits of the curated catalog and of every known provider pass', () => {
    const curated = path.join(__dirname, '../../catalog/hosted-models.yaml');
    const everyOne = PROVIDER_NAMES.map((name) => `${name}: calls=1`).join('; ');
    expect(providerLimitsOf([curated], parseProviderLimits(everyOne)).map((l) => l.key)).toEqual(expect.arrayContaining([...PROVIDER_NAMES]));
    expect(catalogOf([curated]).limits).toEqual([{ file: curated, limits: expect.any(Array) }]);
  });
});

describe('configuredNodes', () => {
  const log = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined } as unknown as Logger;

  it('carries the limits in force: the files\' merged with PROVIDER_LIMITS', async () => {
    const file = fileOf({ nodes: [], limits: { openai: { requestsPerMinute: 500 }, fal: { concurrentCalls: 10 } } });
    const config = loadConfig({ ...BASE_ENV, NODE_CATALOG_FILES: file, PROVIDER_LIMITS: 'openai: tpm=1000' });
    const { limits } = await configuredNodes(config, log, {});
    expect(limits).toEqual([{ key: 'openai', tokensPerMinute: 1000 }, { key: 'fal', concurrentCalls: 10 }]);
  });

  it('refuses (so a reload keeps the nodes in use) a file limiting a provider the server does not call', async () => {
    const file = fileOf({ nodes: [], limits: { groq: { requestsPerMinute: 5 } } });
    const config = loadConfig({ ...BASE_ENV, NODE_CATALOG_FILES: file });
    await expect(configuredNodes(config, log, {})).rejects.toThrow(ProviderLimitsError);
  });
});
