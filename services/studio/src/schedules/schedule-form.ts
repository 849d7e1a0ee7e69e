import type { ArtifactInput } from '../../../contract';

/** What the new-schedule form holds, as typed. */
export interface ScheduleDraft {
  workflowRef: string;
  cron: string;
  timezone: string;
  name: string;
  inputs: string;
  maxCostUsd: string;
  monthlyBudgetUsd: string;
}

export type ScheduleRequest = {
  workflowRef: string;
  cron: string;
  timezone: string;
  name?: string;
  inputs?: Record<string, ArtifactInput>;
  maxCostUsd?: number;
  monthlyBudgetUsd?: number;
};

/** The person's time zone, where the browser says it (a schedule's default in the form). */
export function browserTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

/**
 * The request of a filled form, or what to fix (by field). Inputs are a JSON object of input name
 * to a value (`{"n": 3}`) or an artifact (`{"n": {"value": 3}}`); the service checks the rest
 * (cron, time zone, the workflow's inputs) and its message is shown as it says it.
 */
export function scheduleRequest(draft: ScheduleDraft): { ok: true; request: ScheduleRequest } | { ok: false; field: keyof ScheduleDraft; message: string } {
  if (draft.workflowRef.trim() === '') return { ok: false, field: 'workflowRef', message: 'Give the published workflow, such as acme/flow@1 or acme/flow@latest.' };
  if (draft.cron.trim() === '') return { ok: false, field: 'cron', message: 'Give a cron expression, such as 0 9 * * 1-5 (09:00 on weekdays).' };
  const request: ScheduleRequest = { workflowRef: draft.workflowRef.trim(), cron: draft.cron.trim(), timezone: draft.timezone.trim() || 'UTC' };
  if (draft.name.trim()) request.name = draft.name.trim();
  if (draft.inputs.trim()) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(draft.inputs);
    } catch {
      return { ok: false, field: 'inputs', message: 'Inputs must be a JSON object, such as {"shop": "eu"}.' };
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { ok: false, field: 'inputs', message: 'Inputs must be a JSON object, such as {"shop": "eu"}.' };
    request.inputs = Object.fromEntries(
      Object.entries(parsed as Record<string, unknown>).map(([name, value]) => [name, isArtifact(value) ? value : ({ value } as ArtifactInput)]),
    );
  }
  for (const field of ['maxCostUsd', 'monthlyBudgetUsd'] as const) {
    const text = draft[field].trim();
    if (text === '') continue;
    const amount = Number(text);
    if (!Number.isFinite(amount) || amount <= 0) return { ok: false, field, message: 'Give an amount in USD above 0, such as 0.25.' };
    request[field] = amount;
  }
  return { ok: true, request };
}

function isArtifact(value: unknown): value is ArtifactInput {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && ('value' in value || 'ref' in value);
}
