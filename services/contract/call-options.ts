import { Type, type Static } from '@sinclair/typebox';

/**
 * Options of a call that travel as request headers, beside its input: they shape how the call
 * runs, not what it runs, so the five operations' bodies stay exactly as SPEC.md defines them
 * (docs/runs.md, Cancellation). An operation lists the ones it takes in `http.options`; the HTTP
 * routes read and check them, the SDK sends them, the OpenAPI document lists them, each by
 * looping over this table.
 */
export const CALL_OPTIONS = {
  maxDurationSeconds: {
    header: 'Max-Duration-Seconds',
    description: "The run's own deadline: if still unfinished this many seconds after it was accepted, it is cancelled (run.failed, code cancelled). 1 to 604800 (7 days); the service's run timeout still applies",
    min: 1,
    max: 604_800,
    schema: Type.Integer({ minimum: 1, maximum: 604_800 }),
  },
} as const;

export type CallOptionName = keyof typeof CALL_OPTIONS;

/** The values of call options, as a handler sees them (absent when the caller gave none). */
export type CallOptionValues = { [K in CallOptionName]?: Static<(typeof CALL_OPTIONS)[K]['schema']> };

/**
 * Reads option `name` from its header's text: the value, or a message that tells the caller what
 * to send instead. Whitespace around the value is ignored, as HTTP does.
 */
export function parseCallOption<K extends CallOptionName>(name: K, raw: string): { ok: true; value: NonNullable<CallOptionValues[K]> } | { ok: false; message: string } {
  const { header, min, max } = CALL_OPTIONS[name];
  const text = raw.trim();
  const value = /^\d{1,15}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    return { ok: false, message: `the ${header} header must be a whole number of seconds from ${min} to ${max}, got ${JSON.stringify(text.slice(0, 40))}` };
  }
  return { ok: true, value: value as NonNullable<CallOptionValues[K]> };
}
