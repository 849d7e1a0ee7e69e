import { fixed } from './latency';

/**
 * One line of the bench table: a figure of ours beside the same figure of the peer measured in
 * the same run. `ratio` is how many times worse ours is (lower is better): ours ÷ peer for a
 * time, peer ÷ ours for a rate.
 */
export interface Row {
  /** B1 … B8. */
  id: string;
  /** What was measured, e.g. `1-node run, POST → [DONE], p50`. */
  figure: string;
  ours: number;
  unit: string;
  /** `time` (lower is better) or `rate` (higher is better). */
  kind: 'time' | 'rate' | 'size';
  peer?: { name: string; value: number };
  /** The goal as printed, and whether it is met; absent where the issue sets none. */
  goal?: { text: string; met: boolean };
}

export function ratioOf(row: Row): number {
  if (!row.peer) return NaN;
  return row.kind === 'rate' ? row.peer.value / row.ours : row.ours / row.peer.value;
}

const value = (n: number, unit: string) => `${n >= 100 ? fixed(n, 0) : n >= 10 ? fixed(n, 1) : fixed(n)} ${unit}`;

/** The rows as an aligned text table. */
export function table(rows: readonly Row[]): string {
  const header = ['id', 'figure', 'ours', 'peer (same run)', 'peer', 'ratio', 'goal'];
  const body = rows.map((r) => [
    r.id,
    r.figure,
    value(r.ours, r.unit),
    r.peer?.name ?? '',
    r.peer ? value(r.peer.value, r.unit) : '',
    r.peer ? `${fixed(ratioOf(r))}×` : '',
    r.goal ? `${r.goal.text}: ${r.goal.met ? 'met' : 'NOT met'}` : '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((cells) => cells[i]!.length)));
  const right = new Set([2, 4, 5]);
  const fmt = (cells: string[]) => cells.map((c, i) => (right.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(fmt)].join('\n');
}

/** `met` for a goal `ours ≤ max`. */
export const atMost = (text: string, measured: number, max: number) => ({ text, met: measured <= max });
/** `met` for a goal `ours ≥ min`. */
export const atLeast = (text: string, measured: number, min: number) => ({ text, met: measured >= min });

/**
 * The end of a bench's output: how many goals were met, then either `ok` (no failure) or every
 * failed phase with up to five of its distinct messages. Answers the process' exit code.
 */
export function closingReport(rows: readonly Row[], failures: ReadonlyMap<string, readonly string[]>, ok: string): number {
  const goals = rows.filter((r) => r.goal);
  console.log(`goals: ${goals.filter((r) => r.goal!.met).length} of ${goals.length} met`);
  if (failures.size === 0) {
    console.log(ok);
    return 0;
  }
  console.log('\nFAILURES');
  for (const [phase, list] of failures) {
    console.log(`  ${phase}: ${list.length}`);
    for (const message of [...new Set(list)].slice(0, 5)) console.log(`    - ${message}`);
  }
  return 1;
}
