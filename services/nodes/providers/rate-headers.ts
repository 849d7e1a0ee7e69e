/**
 * What a provider's answer says about its rate limits: how long to wait before the next request
 * (`Retry-After`, `retry-after-ms`) and what is left of its request and token budgets until
 * when (OpenAI's `x-ratelimit-*`, Anthropic's `anthropic-ratelimit-*`). A header that makes no
 * sense is ignored, never obeyed: one bad value must not stall the fleet for a day.
 */

/** What is left of one budget, and in how many milliseconds it is full again. */
export interface RateBudget {
  remaining: number;
  resetMs: number;
}

/** The advice of one answer's headers; `ignored` lists each header not obeyed as `name: value (why)`, to log once. */
export interface RateAdvice {
  retryAfterMs?: number;
  requests?: RateBudget;
  tokens?: RateBudget;
  ignored: string[];
}

/** The longest wait or reset believed; more is a provider's bug or a clock gone wrong. */
export const MAX_ADVISED_MS = 60 * 60 * 1000;
/** The largest remaining count believed. */
export const MAX_REMAINING = 1e9;

/** Milliseconds a `Retry-After` header asks for (seconds or an HTTP date), or undefined. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  if (/^\d+(\.\d+)?$/.test(header.trim())) return Math.ceil(Number(header) * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** A value read, or why it is not believed. */
type Reading = { ms: number } | { why: string };

const DECIMAL = /^\d+(\.\d+)?$/;
/** Go's duration format as OpenAI sends it: `1s`, `6m0s`, `20ms`, `1h2m3.5s`. */
const GO_DURATION = /^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
/** An HTTP date names its weekday or month in letters (`Wed, 21 Oct 2015 07:28:00 GMT`). */
const HTTP_DATE = /^[A-Za-z]{3},? /;

function bounded(ms: number): Reading {
  return ms > MAX_ADVISED_MS ? { why: 'more than an hour away' } : { ms };
}

function seconds(value: string, now: number): Reading {
  if (DECIMAL.test(value)) return bounded(Math.ceil(Number(value) * 1000));
  if (/^-\d/.test(value)) return { why: 'negative' };
  if (!HTTP_DATE.test(value) || Number.isNaN(Date.parse(value))) return { why: 'neither seconds nor an HTTP date' };
  return bounded(Math.max(0, Date.parse(value) - now));
}

function milliseconds(value: string): Reading {
  if (/^-\d/.test(value)) return { why: 'negative' };
  return DECIMAL.test(value) ? bounded(Math.ceil(Number(value))) : { why: 'not a number of milliseconds' };
}

function goDuration(value: string): Reading {
  const match = GO_DURATION.exec(value);
  if (!match || value === '') return { why: /^-\d/.test(value) ? 'negative' : 'not a duration such as 1s, 6m0s or 20ms' };
  const [h = '0', m = '0', s = '0', ms = '0'] = match.slice(1).map((part) => part ?? '0');
  return bounded(Math.ceil(Number(h) * 3_600_000 + Number(m) * 60_000 + Number(s) * 1000 + Number(ms)));
}

function rfc3339(value: string, now: number): Reading {
  const at = RFC3339.test(value) ? Date.parse(value) : NaN;
  return Number.isNaN(at) ? { why: 'not an RFC 3339 time' } : bounded(Math.max(0, at - now));
}

function count(value: string): { n: number } | { why: string } {
  if (/^-\d/.test(value)) return { why: 'negative' };
  if (!/^\d+$/.test(value)) return { why: 'not a whole number' };
  const n = Number(value);
  return n > MAX_REMAINING ? { why: `above ${MAX_REMAINING}` } : { n };
}

/** The headers of one budget: its remaining count and its reset, read by `reset`. */
interface BudgetHeaders {
  remaining: string;
  reset: string;
  readReset: (value: string, now: number) => Reading;
}

const OPENAI = (what: 'requests' | 'tokens'): BudgetHeaders => ({ remaining: `x-ratelimit-remaining-${what}`, reset: `x-ratelimit-reset-${what}`, readReset: goDuration });
const ANTHROPIC = (what: string): BudgetHeaders => ({ remaining: `anthropic-ratelimit-${what}-remaining`, reset: `anthropic-ratelimit-${what}-reset`, readReset: rfc3339 });

/** Each budget's header pairs; where several apply (Anthropic's token kinds), the smallest remaining wins. */
const BUDGETS: Record<'requests' | 'tokens', BudgetHeaders[]> = {
  requests: [OPENAI('requests'), ANTHROPIC('requests')],
  tokens: [OPENAI('tokens'), ANTHROPIC('tokens'), ANTHROPIC('input-tokens'), ANTHROPIC('output-tokens')],
};

/**
 * Reads the rate-limit headers of a provider's answer. A budget is given only when both its
 * remaining count and its reset are present and believable; `retry-after-ms` is preferred to
 * `Retry-After` when both are. `now` is the epoch milliseconds the dates are measured from.
 */
export function readRateHeaders(headers: Headers, now: number): RateAdvice {
  const ignored: string[] = [];
  const read = <T>(name: string, parse: (value: string) => T | { why: string }): T | undefined => {
    const raw = headers.get(name);
    if (raw === null) return undefined;
    const result = parse(raw.trim());
    if (typeof result === 'object' && result !== null && 'why' in result) {
      ignored.push(`${name}: ${raw} (${result.why})`);
      return undefined;
    }
    return result as T;
  };

  const advice: RateAdvice = { ignored };
  const retryMs = read<{ ms: number }>('retry-after-ms', milliseconds);
  const retry = read<{ ms: number }>('retry-after', (value) => seconds(value, now));
  const wait = retryMs ?? retry;
  if (wait) advice.retryAfterMs = wait.ms;

  for (const [budget, pairs] of Object.entries(BUDGETS) as [keyof typeof BUDGETS, BudgetHeaders[]][]) {
    let least: RateBudget | undefined;
    for (const pair of pairs) {
      const remaining = read<{ n: number }>(pair.remaining, count);
      const reset = read<{ ms: number }>(pair.reset, (value) => pair.readReset(value, now));
      if (!remaining || !reset) continue;
      // The tightest budget rules; of two equally tight, the one that is full again later.
      if (!least || remaining.n < least.remaining || (remaining.n === least.remaining && reset.ms > least.resetMs)) least = { remaining: remaining.n, resetMs: reset.ms };
    }
    if (least) advice[budget] = least;
  }
  return advice;
}
