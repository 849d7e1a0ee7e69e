import { Type, type Static } from '@sinclair/typebox';
import { TERMINAL_EVENT_TYPES, type RunEventType } from './schemas/run-event';

/** Every run event type a webhook may ask for. */
export const WEBHOOK_EVENT_TYPES: readonly RunEventType[] = ['run.started', 'step.started', 'step.progress', 'step.completed', 'step.failed', 'run.completed', 'run.failed'];

/** What a webhook receives when it names no events: the run's end. */
export const DEFAULT_WEBHOOK_EVENTS: readonly RunEventType[] = TERMINAL_EVENT_TYPES;

/** Longest webhook URL. */
export const WEBHOOK_URL_MAX = 2048;

/**
 * What a run's steps do with the output cache (docs/runs.md, Output caching): `auto` (the default)
 * reads and writes it for the deterministic utility nodes; `llm` also for LLM calls at
 * temperature 0; `off` neither reads nor writes it.
 */
export const OUTPUT_CACHE_MODES = ['auto', 'llm', 'off'] as const;
export type OutputCacheMode = (typeof OUTPUT_CACHE_MODES)[number];

/** Longest Idempotency-Key: room for a UUID, a hash, or a caller's own composite key. */
export const IDEMPOTENCY_KEY_MAX = 255;

/**
 * Options of a call that travel as request headers, beside its input: they shape how the call
 * runs, not what it runs, so the five operations' bodies stay exactly as SPEC.md defines them
 * (docs/runs.md, Cancellation and Idempotent run creation). An operation lists the ones it takes
 * in `http.options`; the HTTP routes read and check them, the SDK sends them, the OpenAPI
 * document lists them, each by looping over this table.
 */
export const CALL_OPTIONS = {
  maxDurationSeconds: {
    header: 'Max-Duration-Seconds',
    description: "The run's own deadline: if still unfinished this many seconds after it was accepted, it is cancelled (run.failed, code cancelled). 1 to 604800 (7 days); the service's run timeout still applies",
    min: 1,
    max: 604_800,
    schema: Type.Integer({ minimum: 1, maximum: 604_800 }),
  },
  idempotencyKey: {
    header: 'Idempotency-Key',
    description:
      'Makes the run creation safe to send again: the same key with the same request within 24 hours attaches to the run it started (its stream replayed from the start, or its result) instead of starting another; with a different request it is a 422. Keys are per organization; 1 to 255 printable ASCII characters (a UUID is a good one)',
    min: 1,
    max: IDEMPOTENCY_KEY_MAX,
    schema: Type.String({ minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX, pattern: '^[\\x21-\\x7E]+$' }),
  },
  webhookUrl: {
    header: 'Webhook-Url',
    description:
      "Where to POST the run's events (docs/webhooks.md): an http or https URL at a public address, signed with your organization's secret (Standard Webhooks), retried with backoff for 24 hours; the deliveries show on the run record",
    min: 1,
    max: WEBHOOK_URL_MAX,
    schema: Type.String({ minLength: 1, maxLength: WEBHOOK_URL_MAX, format: 'uri' }),
  },
  webhookEvents: {
    header: 'Webhook-Events',
    description: 'The event types the webhook receives, comma-separated (default: run.completed,run.failed); any of run.started, step.started, step.progress, step.completed, step.failed, run.completed, run.failed',
    min: 1,
    max: 7,
    schema: Type.Array(Type.String(), { minItems: 1, maxItems: 7 }),
  },
  outputCache: {
    header: 'Output-Cache',
    description:
      "How the run's steps use the output cache (docs/runs.md, Output caching): auto (default: the deterministic image utilities answer from it when the same node ran on the same inputs in your organization), llm (also LLM calls at temperature 0), off (neither read nor written). A step answered from the cache costs nothing; its step.completed says usage.cached: true",
    min: 1,
    max: OUTPUT_CACHE_MODES.length,
    schema: Type.Union(OUTPUT_CACHE_MODES.map((mode) => Type.Literal(mode))),
  },
} as const;

export type CallOptionName = keyof typeof CALL_OPTIONS;

/** The values of call options, as a handler sees them (absent when the caller gave none). */
export type CallOptionValues = { [K in CallOptionName]?: Static<(typeof CALL_OPTIONS)[K]['schema']> };

type Parsed<K extends CallOptionName> = { ok: true; value: NonNullable<CallOptionValues[K]> } | { ok: false; message: string };

/**
 * Reads option `name` from its header's text: the value, or a message that tells the caller what
 * to send instead. Whitespace around the value is ignored, as HTTP does.
 */
export function parseCallOption<K extends CallOptionName>(name: K, raw: string): Parsed<K> {
  const text = raw.trim();
  const shown = JSON.stringify(text.slice(0, 40));
  if (name === 'idempotencyKey') {
    const { header, max } = CALL_OPTIONS.idempotencyKey;
    if (text.length === 0 || text.length > max || !/^[\x21-\x7E]+$/.test(text)) {
      return { ok: false, message: `the ${header} header must be 1 to ${max} printable ASCII characters without spaces (a UUID is a good key), got ${shown}${text.length > 40 ? ` (${text.length} characters)` : ''}` };
    }
    return { ok: true, value: text } as Parsed<K>;
  }
  if (name === 'webhookUrl') {
    const { header } = CALL_OPTIONS.webhookUrl;
    let url: URL | null = null;
    try {
      url = text.length <= WEBHOOK_URL_MAX ? new URL(text) : null;
    } catch {
      url = null;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '' || url.password !== '') {
      return { ok: false, message: `the ${header} header must be an absolute http or https URL without credentials, at most ${WEBHOOK_URL_MAX} characters, got ${shown}` };
    }
    return { ok: true, value: url.href } as Parsed<K>;
  }
  if (name === 'webhookEvents') {
    const { header } = CALL_OPTIONS.webhookEvents;
    const types = text.split(',').map((t) => t.trim()).filter((t) => t !== '');
    const unknown = types.filter((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
    if (types.length === 0 || unknown.length > 0) {
      return { ok: false, message: `the ${header} header must list event types separated by commas, of ${WEBHOOK_EVENT_TYPES.join(', ')}; ${unknown.length > 0 ? `unknown: ${unknown.slice(0, 3).join(', ')}` : 'it lists none'}` };
    }
    return { ok: true, value: [...new Set(types)] } as Parsed<K>;
  }
  if (name === 'outputCache') {
    const mode = text.toLowerCase();
    if (!(OUTPUT_CACHE_MODES as readonly string[]).includes(mode)) {
      return { ok: false, message: `the ${CALL_OPTIONS.outputCache.header} header must be one of ${OUTPUT_CACHE_MODES.join(', ')}, got ${shown}` };
    }
    return { ok: true, value: mode } as Parsed<K>;
  }
  const { header, min, max } = CALL_OPTIONS.maxDurationSeconds;
  const value = /^\d{1,15}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    return { ok: false, message: `the ${header} header must be a whole number of seconds from ${min} to ${max}, got ${shown}` };
  }
  return { ok: true, value } as Parsed<K>;
}
