import type { MState } from './money-model';
import type { RealRun, RealState } from './money-store';

/**
 * M2's two checks after every command: the store's money equal to the model's (field by field),
 * and the invariants of docs/money.md on what Postgres holds, whatever the model says.
 */

const UNFINISHED = ['pending', 'running'];

/** The differences between the model's state and the store's, given how model ids map to the store's. */
export function differences(model: MState, real: RealState, runIds: readonly string[], tokens: ReadonlyMap<number, string>): string[] {
  const diffs: string[] = [];
  const same = (what: string, expected: unknown, actual: unknown) => {
    if (expected !== actual) diffs.push(`${what}: model ${JSON.stringify(expected)}, store ${JSON.stringify(actual)}`);
  };
  same('balance', model.balance, real.balance);
  same('organization held', model.held, real.held);
  same('ledger sum', model.balance, real.ledger);
  same('runs', model.runs.length, real.runs.length);
  const byId = new Map(real.runs.map((r) => [r.id, r]));
  model.runs.forEach((run, i) => {
    const stored = byId.get(runIds[i] ?? '');
    if (!stored) {
      diffs.push(`run ${i}: not in the store`);
      return;
    }
    for (const key of ['cap', 'authorized', 'status', 'reserved', 'spent', 'charged', 'held'] as const) same(`run ${i} ${key}`, run[key], stored[key]);
    run.steps.forEach((step, j) => {
      const s = stored.steps[j];
      if (!s || s.node !== step.node) {
        diffs.push(`run ${i} step ${step.node}: not in the store`);
        return;
      }
      const at = `run ${i} step ${step.node}`;
      for (const key of ['status', 'attempt', 'pendingDeps', 'reserved', 'lostCharge', 'cost', 'started'] as const) same(`${at} ${key}`, step[key], s[key]);
      same(`${at} token`, step.token === null ? null : (tokens.get(step.token) ?? `model token ${step.token}`), s.token);
      same(`${at} charges`, JSON.stringify(step.charged ? [step.cost] : []), JSON.stringify(s.charges));
    });
  });
  return diffs;
}

/** svc_run_hold computed from a stored run: what it must hold of its organization's balance. */
function expectedHold(run: RealRun): number {
  if (run.authorized === null) return 0;
  const base = UNFINISHED.includes(run.status) ? run.authorized : run.reserved + run.spent;
  return Math.max(0, base - run.charged);
}

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

/** The invariants of docs/money.md and StepRepository's header, broken ones named. */
export function brokenInvariants(real: RealState): string[] {
  const broken: string[] = [];
  const expect = (ok: boolean, what: string) => {
    if (!ok) broken.push(what);
  };
  expect(real.balance >= 0, `balance ${real.balance} < 0`);
  expect(real.balance === real.ledger, `balance ${real.balance} ≠ the sum of its ledger ${real.ledger}`);
  expect(real.held >= 0 && real.held <= real.balance, `organization held ${real.held} outside 0..balance ${real.balance}`);
  expect(real.held === sum(real.runs.map((r) => r.held)), `organization held ${real.held} ≠ the sum of its runs' holds ${sum(real.runs.map((r) => r.held))}`);
  for (const run of real.runs) {
    const at = `run ${run.id.slice(0, 8)}`;
    const limit = Math.min(run.cap, run.authorized ?? run.cap);
    expect(run.reserved >= 0, `${at}: reservation ${run.reserved} < 0`);
    expect(run.spent <= run.cap, `${at}: spent ${run.spent} > cap ${run.cap}`);
    expect(run.spent + run.reserved <= run.cap, `${at}: spent ${run.spent} + reserved ${run.reserved} > cap ${run.cap}`);
    expect(run.spent + run.reserved <= limit, `${at}: spent ${run.spent} + reserved ${run.reserved} > its authorization ${run.authorized}`);
    expect(run.reserved === sum(run.steps.map((s) => s.reserved)), `${at}: reservation ${run.reserved} ≠ its steps' ${sum(run.steps.map((s) => s.reserved))}`);
    expect(run.spent === sum(run.steps.map((s) => s.cost)), `${at}: spent ${run.spent} ≠ its steps' costs ${sum(run.steps.map((s) => s.cost))}`);
    expect(run.held === expectedHold(run), `${at}: holds ${run.held}, its state says ${expectedHold(run)}`);
    expect(run.charged === run.ledgerCharged, `${at}: charged ${run.charged} ≠ its ledger charges ${run.ledgerCharged}`);
    expect(run.charged <= (run.authorized ?? run.cap), `${at}: charged ${run.charged} beyond its authorization ${run.authorized}`);
    const stillRunning = run.steps.some((s) => s.status === 'running');
    expect(UNFINISHED.includes(run.status) || stillRunning || run.reserved === 0, `${at}: ${run.status} with nothing running still reserves ${run.reserved}`);
    for (const s of run.steps) {
      const step = `${at} step ${s.node}`;
      expect(s.reserved >= 0 && (s.status === 'running' || s.reserved === 0), `${step}: ${s.status} holding ${s.reserved}`);
      expect(s.charges.length <= 1, `${step}: charged ${s.charges.length} times (${s.charges.join(', ')})`);
      const settled = ['completed', 'failed', 'cancelled'].includes(s.status);
      if (s.charges.length === 1) expect(settled && s.charges[0] === s.cost, `${step}: ${s.status}, cost ${s.cost}, charged ${s.charges[0]}`);
      else expect(!settled || s.cost === 0, `${step}: ${s.status} with cost ${s.cost} never charged`);
    }
  }
  return broken;
}

/**
 * A settled amount never above its reservation: across one operation, what each run spent is at
 * most what it had reserved before (new runs start from nothing spent).
 */
export function overSettled(before: RealState, after: RealState): string[] {
  const earlier = new Map(before.runs.map((r) => [r.id, r]));
  const over: string[] = [];
  for (const run of after.runs) {
    const was = earlier.get(run.id);
    const spent = run.spent - (was?.spent ?? 0);
    const reserved = was?.reserved ?? run.reserved + run.spent;
    if (spent > reserved) over.push(`run ${run.id.slice(0, 8)}: spent ${spent} in one operation with ${reserved} reserved`);
  }
  return over;
}

/** After the last release: nothing of this organization is unfinished, reserved or held. */
export function leftOver(real: RealState): string[] {
  const left: string[] = [];
  if (real.held !== 0) left.push(`organization still holds ${real.held}`);
  for (const run of real.runs) {
    if (UNFINISHED.includes(run.status) || run.reserved !== 0 || run.held !== 0) left.push(`run ${run.id.slice(0, 8)}: ${run.status}, reserved ${run.reserved}, held ${run.held}`);
    for (const s of run.steps) if (s.status === 'running') left.push(`run ${run.id.slice(0, 8)} step ${s.node}: still running`);
  }
  return left;
}
