import type { RecordedMessage } from './run-client';

/**
 * The stream half of the checker: what one sequence of SSE messages must look like, whether a
 * client gathered it over several connections or the run's log replayed it. Pure functions.
 */

export const TERMINAL_TYPES: readonly string[] = ['run.completed', 'run.failed'];

export interface ParsedEvent {
  id: string | undefined;
  type: string;
  nodeId?: string;
  outputs?: unknown;
}

export function parseEvents(messages: readonly RecordedMessage[]): { events: ParsedEvent[]; malformed: number } {
  const events: ParsedEvent[] = [];
  let malformed = 0;
  for (const message of messages) {
    if (message.data === '[DONE]') continue;
    try {
      const body = JSON.parse(message.data) as { type?: unknown; nodeId?: unknown; outputs?: unknown };
      events.push({ id: message.id, type: String(body.type), nodeId: typeof body.nodeId === 'string' ? body.nodeId : undefined, outputs: body.outputs });
    } catch {
      malformed += 1;
    }
  }
  return { events, malformed };
}

/**
 * The rules of one run's stream (SPEC.md Events; ids are the run log's seq: 1, 2, 3…): ids
 * gap-free from 1 in arrival order, none repeated, exactly one terminal event, and `[DONE]` once,
 * right after it, as the last message. `who` names the stream in each violation.
 */
export function streamViolations(who: string, messages: readonly RecordedMessage[]): string[] {
  const violations: string[] = [];
  const { events, malformed } = parseEvents(messages);
  if (malformed > 0) violations.push(`${who}: ${malformed} message(s) are neither JSON events nor [DONE]`);
  const seen = new Set<string>();
  const duplicates: string[] = [];
  let expected = 1;
  const gaps: string[] = [];
  for (const event of events) {
    const id = event.id ?? '';
    if (seen.has(id)) {
      duplicates.push(id || '(none)');
      continue;
    }
    seen.add(id);
    if (id !== String(expected)) gaps.push(`expected id ${expected}, got ${id || '(none)'}`);
    const numeric = Number(id);
    expected = Number.isSafeInteger(numeric) && numeric >= expected ? numeric + 1 : expected + 1;
  }
  if (duplicates.length > 0) violations.push(`${who}: ${duplicates.length} duplicate event id(s): ${duplicates.slice(0, 10).join(', ')}`);
  if (gaps.length > 0) violations.push(`${who}: event ids not gap-free from 1 (${gaps.slice(0, 5).join('; ')})`);
  const terminals = events.filter((e) => TERMINAL_TYPES.includes(e.type));
  if (terminals.length !== 1) violations.push(`${who}: ${terminals.length} terminal events (run.completed/run.failed), expected exactly 1`);
  const dones = messages.filter((m) => m.data === '[DONE]').length;
  const last = messages.at(-1);
  const beforeLast = messages.at(-2);
  if (dones !== 1 || last?.data !== '[DONE]') {
    violations.push(`${who}: [DONE] sent ${dones} time(s)${last?.data === '[DONE]' ? '' : ', and not as the last message'}; expected once, last`);
  } else if (!beforeLast || !TERMINAL_TYPES.some((t) => beforeLast.data.includes(`"${t}"`))) {
    violations.push(`${who}: [DONE] does not follow the terminal event`);
  }
  return violations;
}

/** Steps the stream reports completed more than once (a step committed twice shows there). */
export function repeatedCompletions(events: readonly ParsedEvent[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of events) if (e.type === 'step.completed' && e.nodeId) counts.set(e.nodeId, (counts.get(e.nodeId) ?? 0) + 1);
  return new Map([...counts].filter(([, count]) => count > 1));
}

/** The terminal event's outputs (run.completed), or undefined. */
export function terminalOutputs(events: readonly ParsedEvent[]): { type: string; outputs: unknown } | undefined {
  const terminal = events.find((e) => TERMINAL_TYPES.includes(e.type));
  return terminal ? { type: terminal.type, outputs: terminal.outputs } : undefined;
}
