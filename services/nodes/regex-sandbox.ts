import { createContext, Script } from 'node:vm';

/**
 * Bounds for user-supplied regular expressions. JavaScript's regex engine backtracks, so a
 * pattern like `(a+)+$` takes exponential time on a short input; short patterns, bounded input
 * and a hard time budget keep one bad pattern from stalling a worker.
 */
export const REGEX_LIMITS = {
  maxPatternLength: 500,
  maxTextLength: 100_000,
  maxReplacementLength: 1_000,
  timeoutMs: 250,
} as const;

/** Why a sandboxed replacement did not produce a result. */
export type RegexFailure = 'timeout' | 'too_long';

export type RegexOutcome = { ok: true; text: string } | { ok: false; failure: RegexFailure };

// One context for the process: the script runs synchronously, so calls never interleave.
const sandbox = createContext(Object.create(null) as Record<string, unknown>);
const replaceScript = new Script('__result = String.prototype.replace.call(__text, new RegExp(__pattern, __flags), __replacement);');

/**
 * `text.replace(new RegExp(pattern, flags), replacement)` under a time budget. V8 can only
 * interrupt a running regex through a vm timeout, which applies to a script run, so the work
 * runs as one. The pattern and flags must already be known to compile.
 */
export function replaceWithTimeout(text: string, pattern: string, flags: string, replacement: string): RegexOutcome {
  Object.assign(sandbox, { __text: text, __pattern: pattern, __flags: flags, __replacement: replacement, __result: undefined });
  try {
    replaceScript.runInContext(sandbox, { timeout: REGEX_LIMITS.timeoutMs });
    return { ok: true, text: sandbox.__result as string };
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return { ok: false, failure: 'timeout' };
    // Errors from the sandbox belong to its own realm, so `instanceof RangeError` is false there.
    if ((err as { name?: unknown }).name === 'RangeError') return { ok: false, failure: 'too_long' };
    throw err;
  } finally {
    // Large strings must not stay reachable from the shared context.
    Object.assign(sandbox, { __text: undefined, __replacement: undefined, __result: undefined });
  }
}
