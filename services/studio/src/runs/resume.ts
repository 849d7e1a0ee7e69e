import type { FieldValue, FormField } from './input-form';

/**
 * What the run panel remembers of a run it started, so a reload reattaches to it: the run id and
 * the last event seq it applied, under `svc.run.<resumeKey>` in localStorage. Written when the
 * run starts and as events arrive, marked finished when it ends, removed when the panel's result
 * is dismissed.
 */
export interface RememberedRun {
  runId: string;
  lastSeq: number;
  finished: boolean;
  maxCostUsd: number;
}

export function storageKey(resumeKey: string): string {
  return `svc.run.${resumeKey}`;
}

function storage(): Storage | null {
  try {
    return typeof localStorage === 'undefined' ? null : localStorage;
  } catch {
    return null;
  }
}

export function recall(resumeKey: string): RememberedRun | null {
  const raw = storage()?.getItem(storageKey(resumeKey));
  if (!raw) return null;
  try {
    const value = JSON.parse(raw) as Partial<RememberedRun>;
    if (typeof value.runId !== 'string' || !value.runId) return null;
    return {
      runId: value.runId,
      lastSeq: typeof value.lastSeq === 'number' && value.lastSeq >= 0 ? value.lastSeq : 0,
      finished: value.finished === true,
      maxCostUsd: typeof value.maxCostUsd === 'number' ? value.maxCostUsd : 0.5,
    };
  } catch {
    return null;
  }
}

export function remember(resumeKey: string, run: RememberedRun): void {
  try {
    storage()?.setItem(storageKey(resumeKey), JSON.stringify(run));
  } catch {
    // Storage full or refused: the run goes on, only a reload will not find it.
  }
}

export function forget(resumeKey: string): void {
  storage()?.removeItem(storageKey(resumeKey));
}

/** The run form's values, kept under `svc.run-inputs.<resumeKey>` so a reload keeps what was typed. */
export function valuesKey(resumeKey: string): string {
  return `svc.run-inputs.${resumeKey}`;
}

export function rememberValues(resumeKey: string, values: Readonly<Record<string, FieldValue>>): void {
  try {
    storage()?.setItem(valuesKey(resumeKey), JSON.stringify(values));
  } catch {
    // Not kept: only a reload loses the typed values.
  }
}

/** The remembered values of fields that still exist with the same widget. */
export function recallValues(resumeKey: string, fields: readonly FormField[]): Record<string, FieldValue> {
  const raw = storage()?.getItem(valuesKey(resumeKey));
  if (!raw) return {};
  try {
    const saved = JSON.parse(raw) as Record<string, FieldValue | undefined>;
    const out: Record<string, FieldValue> = {};
    for (const field of fields) {
      const value = saved[field.id];
      if (value && typeof value === 'object' && value.widget === field.widget) out[field.id] = value;
    }
    return out;
  } catch {
    return {};
  }
}

/**
 * Whether a run started from this key is remembered and not known to have finished: the editor
 * opens the run panel on load when it is, so a reload mid-run reattaches at once.
 */
export function hasUnfinishedRun(resumeKey: string): boolean {
  const run = recall(resumeKey);
  return run !== null && !run.finished;
}
