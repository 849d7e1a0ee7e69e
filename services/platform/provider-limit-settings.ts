import { SettingError } from './setting-parsers';

/**
 * Operators' limits of hosted providers (requests and tokens per minute, calls at once), stated
 * once for the whole fleet: in `PROVIDER_LIMITS` and in catalog files' `limits:` maps. This
 * module reads the setting's syntax, checks the bounds both sources share, and merges the two.
 */

/**
 * One provider's limits, or one model's of it. `key` is `openai` or `openai/gpt-4o-mini`: the
 * provider, then optionally `/` and the model, which is everything after the first `/` (it may
 * hold `/` and `:` itself, e.g. `fal/fal-ai/flux/schnell`). Absent fields are not limited.
 */
export interface ProviderLimitSetting {
  key: string;
  requestsPerMinute?: number;
  tokensPerMinute?: number;
  concurrentCalls?: number;
}

export type LimitField = Exclude<keyof ProviderLimitSetting, 'key'>;

/**
 * Each limit's short name in `PROVIDER_LIMITS` and its upper bound: far above any provider's
 * published tier, so a bound hit is a typo (an extra zero), not a real limit.
 */
export const LIMIT_FIELDS: Readonly<Record<LimitField, { short: string; max: number }>> = {
  requestsPerMinute: { short: 'rpm', max: 1_000_000 },
  tokensPerMinute: { short: 'tpm', max: 1_000_000_000 },
  concurrentCalls: { short: 'calls', max: 100_000 },
};

const FIELD_NAMES = Object.keys(LIMIT_FIELDS) as LimitField[];
const BY_SHORT = new Map(FIELD_NAMES.map((field) => [LIMIT_FIELDS[field].short, field]));

/** A provider name, then optionally `/` and a model of no spaces (which may hold `/`). */
const KEY = /^[a-z0-9][a-z0-9-]*(\/[^\s/]\S*)?$/;

/** What is wrong with a limit key, or undefined. */
export function limitKeyProblem(key: string): string | undefined {
  if (key === '') return 'the key (a provider, or provider/model) is missing';
  if (!KEY.test(key)) return `"${key}" is not a provider (lower-case letters, digits, "-") or provider/model`;
  return undefined;
}

/** What is wrong with one limit's value (read from text or YAML), or undefined. */
export function limitValueProblem(field: LimitField, value: unknown): string | undefined {
  const { max } = LIMIT_FIELDS[field];
  const ok = typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= max;
  return ok ? undefined : `must be a whole number from 1 to ${max}, got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`;
}

/** The provider part of a key: `openai` of `openai/gpt-4o-mini`. */
export const providerOfKey = (key: string): string => key.split('/', 1)[0]!;

/**
 * `PROVIDER_LIMITS`: entries split by `;`, each `key: field=value ...` with the fields `rpm`,
 * `tpm` and `calls`, e.g. `openai: rpm=500 tpm=200000 calls=50; fal: calls=10`. The key ends at
 * the entry's last `:` (a Replicate model's version keeps its own). Empty: no limits.
 */
export function parseProviderLimits(raw: string): ProviderLimitSetting[] {
  const limits: ProviderLimitSetting[] = [];
  const seen = new Set<string>();
  const entries = raw.split(';').map((e) => e.trim()).filter((e) => e !== '');
  entries.forEach((entry, index) => {
    const fail = (message: string): never => {
      throw new SettingError(`entry ${index + 1} ("${entry}"): ${message}`);
    };
    const colon = entry.lastIndexOf(':');
    if (colon < 0) fail('must be "provider: rpm=N tpm=N calls=N" (the key and its ":" are missing)');
    const key = entry.slice(0, colon).trim();
    const keyProblem = limitKeyProblem(key);
    if (keyProblem) fail(keyProblem);
    if (seen.has(key)) fail(`"${key}" is given limits by an earlier entry too; state each key once`);
    seen.add(key);
    const setting: ProviderLimitSetting = { key };
    const pairs = entry.slice(colon + 1).trim().split(/\s+/).filter((p) => p !== '');
    if (pairs.length === 0) fail(`states no limit; give at least one of ${[...BY_SHORT.keys()].join(', ')}`);
    for (const pair of pairs) {
      const [short = '', value, ...rest] = pair.split('=');
      const field = BY_SHORT.get(short);
      if (!field) fail(`"${short}" is not a limit; the limits are ${[...BY_SHORT.keys()].join(', ')}`);
      if (value === undefined || rest.length > 0) fail(`"${pair}" must be ${short}=N`);
      if (setting[field!] !== undefined) fail(`${short} is given twice`);
      const number = /^-?\d+(\.\d*)?$/.test(value!) ? Number(value) : value;
      const problem = limitValueProblem(field!, number);
      if (problem) fail(`${short} ${problem}`);
      setting[field!] = number as number;
    }
    limits.push(setting);
  });
  return limits;
}

/** Limits the process cannot start (or reload) with: an unknown provider, two files disagreeing. */
export class ProviderLimitsError extends Error {
  override readonly name = 'ProviderLimitsError';
}

/** The limits a catalog file states, as read from its `limits:` map. */
export interface FileProviderLimits {
  file: string;
  limits: readonly ProviderLimitSetting[];
}

const sameLimits = (a: ProviderLimitSetting, b: ProviderLimitSetting): boolean => FIELD_NAMES.every((field) => a[field] === b[field]);

/**
 * The limits in force: the files' and `PROVIDER_LIMITS`' together, one entry per key. The setting
 * wins over a file for the same key, as a whole entry (an operator overriding `openai` states all
 * of its limits); two files may state a key only alike. Every key's provider must be one the
 * server calls, so a misspelt provider fails the start instead of limiting nothing.
 */
export function mergeProviderLimits(fromFiles: readonly FileProviderLimits[], fromEnv: readonly ProviderLimitSetting[], knownProviders: readonly string[]): ProviderLimitSetting[] {
  const known = new Set(knownProviders);
  const unknown = (key: string, where: string) =>
    new ProviderLimitsError(`${where}: "${key}" names provider "${providerOfKey(key)}", which this server does not call; the providers are ${[...known].sort().join(', ')}`);
  const merged = new Map<string, { setting: ProviderLimitSetting; file: string }>();
  for (const { file, limits } of fromFiles) {
    for (const setting of limits) {
      if (!known.has(providerOfKey(setting.key))) throw unknown(setting.key, `${file}: limits.${setting.key}`);
      const earlier = merged.get(setting.key);
      if (earlier && !sameLimits(earlier.setting, setting)) {
        throw new ProviderLimitsError(`${file}: limits.${setting.key}: differs from the limits ${earlier.file} states for it; state them in one file, or alike in both`);
      }
      if (!earlier) merged.set(setting.key, { setting, file });
    }
  }
  const result = new Map([...merged].map(([key, { setting }]) => [key, setting]));
  for (const setting of fromEnv) {
    if (!known.has(providerOfKey(setting.key))) throw unknown(setting.key, 'PROVIDER_LIMITS');
    result.set(setting.key, setting);
  }
  return [...result.values()];
}
