import fs from 'node:fs';
import path from 'node:path';

/**
 * The figures the fault suite prints: each scenario records what it measured against its goal,
 * one JSON line per figure, into `.test-artifacts/fault-figures.jsonl` (or `FAULT_FIGURES_FILE`);
 * `deploy/local/fault-table.cjs` prints them as one table after the run and fails when a goal
 * was missed. A scenario also asserts each goal itself, so a miss fails its test too.
 */

const ROOT = path.resolve(__dirname, '../../..');
export const FIGURES_FILE = process.env.FAULT_FIGURES_FILE ?? path.join(ROOT, '.test-artifacts', 'fault-figures.jsonl');

/** `FAULTS_FULL=1` (make test-faults): the issue's full counts; otherwise the shortened ones inside make test. */
export const FULL = process.env.FAULTS_FULL === '1';

/** The count of a scenario: `short` inside make test, `full` under make test-faults. */
export function scale(short: number, full: number): number {
  return FULL ? full : short;
}

/** A goal: the figure at most `max`, at least `min`, or equal to `equals`; none: reported only. */
export interface Goal {
  max?: number;
  min?: number;
  equals?: number | string;
}

export interface Figure {
  scenario: string;
  name: string;
  value: number | string;
  unit?: string;
  goal?: Goal;
  met: boolean;
  at: string;
  full: boolean;
}

export function goalMet(value: number | string, goal: Goal | undefined): boolean {
  if (!goal) return true;
  if (goal.equals !== undefined && value !== goal.equals) return false;
  if (typeof value === 'number') {
    if (goal.max !== undefined && !(value <= goal.max)) return false;
    if (goal.min !== undefined && !(value >= goal.min)) return false;
  }
  return true;
}

/**
 * Records one figure of `scenario` (R1, M2, S3, …) and prints it; returns whether its goal was
 * met, so the caller can also `expect(...)` it with a message of its own.
 */
export function figure(scenario: string, name: string, value: number | string, goal?: Goal, unit?: string): boolean {
  const met = goalMet(value, goal);
  const entry: Figure = { scenario, name, value, unit, goal, met, at: new Date().toISOString(), full: FULL };
  fs.mkdirSync(path.dirname(FIGURES_FILE), { recursive: true });
  fs.appendFileSync(FIGURES_FILE, `${JSON.stringify(entry)}\n`);
  return met;
}

/** Records a figure and fails the test when its goal is missed, naming the figure, value and goal. */
export function expectFigure(scenario: string, name: string, value: number | string, goal: Goal, unit?: string): void {
  if (!figure(scenario, name, value, goal, unit)) {
    throw new Error(`${scenario}: ${name} = ${value}${unit ? ` ${unit}` : ''} misses its goal ${JSON.stringify(goal)}`);
  }
}

/**
 * The goal of a figure that is a timing: judged in the full run (`make test-faults`, which has the
 * machine to itself), only recorded in `make test`'s shortened run, where other test files share
 * the two cores and a timing measures the neighbours as much as the service (speed is measured,
 * never asserted, inside `make test`).
 */
export function timingGoal(goal: Goal): Goal | undefined {
  return FULL ? goal : undefined;
}

/** The p-th percentile (0-100) of `values` (nearest rank); NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}
