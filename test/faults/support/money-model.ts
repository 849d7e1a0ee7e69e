/**
 * M2's model of the money: one organization, its balance and holds, its runs and their steps, as
 * plain numbers. Each operation of the store (services/store: RunRepository, StepRepository,
 * LedgerRepository, RunRecoveryRepository, and the functions of prisma/functions/) is one pure
 * function here from a state to the next state and the answer the store must give; the test
 * drives both and compares them after every command (money-store.ts does the store's side).
 *
 * The model follows docs/money.md and the function headers, not their code: a run is admitted
 * with a hold of min(cap, available) (the pre-authorization), spends at most min(cap, hold), a
 * step's attempt holds its estimate until it settles (at most what it held) or is released, a
 * lost attempt expires into its lost charge when taken over or when its run is failed (the
 * reaper's timeout), and each step is charged to the ledger once.
 */

export const NODES = ['a', 'b', 'c'] as const;
/** Attempts a step may have in all; small so that exhaustion is reached. */
export const MAX_ATTEMPTS = 3;

export type RunShape = 'parallel' | 'chain';
type StepStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped' | 'cancelled';
type RunStatus = 'pending' | 'running' | 'completed' | 'failed';

export interface MStep {
  node: string;
  pendingDeps: number;
  status: StepStatus;
  attempt: number;
  /** The attempt token owning the step, as a model id (money-store.ts maps it to the real UUID). */
  token: number | null;
  /** The token before it: what a stale worker still holds. */
  prevToken: number | null;
  reserved: number;
  lostCharge: number;
  cost: number;
  /** started_at is set: a worker took the attempt (a step reserved with its run has none yet). */
  started: boolean;
  /** Its one run_charge ledger entry is written. */
  charged: boolean;
}

export interface MRun {
  shape: RunShape;
  cap: number;
  authorized: number;
  status: RunStatus;
  reserved: number;
  spent: number;
  charged: number;
  held: number;
  steps: MStep[];
}

export interface MState {
  balance: number;
  held: number;
  runs: MRun[];
  nextToken: number;
}

/** A deliberately wrong model, to prove the comparison can fail (see the test). */
export interface ModelFlaws {
  /** Reservations ignore the cap. */
  ignoreCap?: boolean;
}

export type TokenPick = 'current' | 'stale';

/** One operation, as generated; `run` is taken modulo the runs there are when it runs. */
export type Op =
  | { kind: 'credit'; amount: number }
  | { kind: 'createRun'; cap: number; shape: RunShape; size: number; start: boolean; preReserve: number | null }
  | { kind: 'markRunning'; run: number }
  | { kind: 'reserve'; run: number; node: number; estimate: number; lostCharge: number }
  | { kind: 'retry'; run: number; node: number; token: TokenPick; cost: number; estimate: number; lostCharge: number }
  | { kind: 'complete'; run: number; node: number; token: TokenPick; cost: number; outputs: boolean; next: { estimate: number; lease: boolean } | null; followers: { cost: number; estimate: number }[] }
  | { kind: 'fail'; run: number; node: number; token: TokenPick; cost: number }
  | { kind: 'failRun'; run: number; culprit: number | null }
  | { kind: 'completeRun'; run: number }
  | { kind: 'reap'; timeout: boolean };

/** An operation with its run index and token resolved against the state before it (or its concurrent group) ran. */
export type Resolved = Op & { runIndex: number; nodeIndex: number; tokenId: number | null };

/** What the store answered, without the ids it made (those come back beside it, in `created`). */
export type Answer = Record<string, unknown>;

/** An answer and what the operation created, in order: new token ids and new run indexes. */
export interface Outcome {
  answer: Answer;
  tokens: number[];
  runs: number[];
}

/** A model step whose transaction the store must refuse: the state stays as it was. */
class Rollback extends Error {}

/** Thrown when the model itself reaches a state the design forbids (a charge the hold does not cover). */
export class ModelInvariantBroken extends Error {}

const UNFINISHED: readonly string[] = ['pending', 'running'];

function dependents(run: MRun, index: number): number[] {
  return run.shape === 'chain' && index + 1 < run.steps.length ? [index + 1] : [];
}

/** svc_run_hold: what a run holds of its organization's balance. */
export function runHold(run: MRun): number {
  const base = UNFINISHED.includes(run.status) ? run.authorized : run.reserved + run.spent;
  return Math.max(0, base - run.charged);
}

function syncHold(state: MState, run: MRun): void {
  const hold = runHold(run);
  state.held += hold - run.held;
  run.held = hold;
}

/** svc_charge_ledger: the step's whole cost to the ledger, once. */
function charge(state: MState, run: MRun, step: MStep): void {
  if (step.cost <= 0 || step.charged) return;
  step.charged = true;
  run.charged += step.cost;
  state.balance -= step.cost;
  syncHold(state, run);
}

function ready(step: MStep): boolean {
  return step.pendingDeps === 0 && step.status === 'pending';
}

/** A run whose money still moves: unfinished, or with an attempt still running. */
export function live(run: MRun): boolean {
  return UNFINISHED.includes(run.status) || run.steps.some((s) => s.status === 'running');
}

/**
 * Resolves an operation's run, step and token against `state` (no run: -1; a token never issued:
 * null). Operations go where the money still moves: to the first run from `run` on that is
 * unfinished or still has a running attempt (a running one for a reservation, a pending one to
 * mark running); a reservation to the first ready step from `node` on, else `node` (a takeover).
 * A worker holding the current token of a step that has none would be no worker at all, so
 * `current` names the first running step from `node` on (else one a token completed: a repeated
 * commit); `stale` keeps `node` and takes the token before it.
 */
export function resolve(state: MState, op: Op): Resolved {
  let runIndex = -1;
  if ('run' in op && state.runs.length > 0) {
    const from = state.runs.map((_, k) => (op.run + k) % state.runs.length);
    const wanted = op.kind === 'markRunning' ? (r: MRun) => r.status === 'pending' : op.kind === 'reserve' ? (r: MRun) => r.status === 'running' : live;
    runIndex = from.find((k) => wanted(state.runs[k]!)) ?? from.find((k) => live(state.runs[k]!)) ?? from[0]!;
  }
  let nodeIndex = -1;
  let tokenId: number | null = null;
  if ('node' in op && runIndex >= 0) {
    const steps = state.runs[runIndex]!.steps;
    nodeIndex = op.node % steps.length;
    const from = steps.map((_, k) => (nodeIndex + k) % steps.length);
    // A reservation goes to a ready step if there is one, else (a takeover) to `node`.
    if (op.kind === 'reserve') nodeIndex = from.find((k) => ready(steps[k]!)) ?? nodeIndex;
    if ('token' in op) {
      if (op.token === 'current') {
        const running = from.find((k) => steps[k]!.status === 'running');
        nodeIndex = running ?? from.find((k) => steps[k]!.status === 'completed' && steps[k]!.token !== null) ?? nodeIndex;
      }
      const step = steps[nodeIndex]!;
      tokenId = op.token === 'current' ? step.token : step.prevToken;
    }
  }
  return { ...op, runIndex, nodeIndex, tokenId };
}

/** Applies one resolved operation to a copy of `state`: the next state and the store's expected outcome. */
export function apply(before: MState, op: Resolved, flaws: ModelFlaws = {}): { state: MState; outcome: Outcome } {
  const state = structuredClone(before);
  const outcome: Outcome = { answer: {}, tokens: [], runs: [] };
  try {
    outcome.answer = step(state, op, outcome, flaws);
  } catch (err) {
    if (!(err instanceof Rollback)) throw err;
    return { state: before, outcome: { answer: { error: err.message }, tokens: [], runs: [] } };
  }
  if (state.balance < 0) {
    // The store refuses the statement (prisma/functions/money-checks.sql); that the model got
    // here at all means a hold did not cover a charge.
    throw new ModelInvariantBroken(`${op.kind} would overdraw the balance to ${state.balance}: a charge beyond what the run held`);
  }
  return { state, outcome };
}

function newToken(state: MState, outcome: Outcome): number {
  const id = state.nextToken++;
  outcome.tokens.push(id);
  return id;
}

function giveToken(s: MStep, token: number): void {
  s.prevToken = s.token;
  s.token = token;
}

function step(state: MState, op: Resolved, outcome: Outcome, flaws: ModelFlaws): Answer {
  if (op.kind === 'credit') {
    state.balance += op.amount;
    return { balance: state.balance };
  }
  if (op.kind === 'createRun') return createRun(state, op, outcome);
  if (op.kind === 'reap') return reap(state, op.timeout);
  const run = state.runs[op.runIndex]!;
  const index = op.nodeIndex;
  switch (op.kind) {
    case 'markRunning':
      if (run.status !== 'pending') return { ok: false };
      run.status = 'running';
      return { ok: true };
    case 'reserve':
      return reserve(state, run, index, op, outcome, flaws);
    case 'retry':
      return retry(run, index, op, flaws);
    case 'complete':
      return complete(state, run, index, op, outcome, flaws);
    case 'fail':
      return fail(state, run, index, op);
    case 'failRun':
      return failRun(state, run, op.culprit === null ? null : NODES[op.culprit % run.steps.length]!);
    case 'completeRun':
      return { completed: completeRun(state, run) };
  }
}

function createRun(state: MState, op: Extract<Op, { kind: 'createRun' }>, outcome: Outcome): Answer {
  const available = state.balance - state.held;
  const reserved = op.preReserve ?? 0;
  if (available <= 0 || Math.min(op.cap, available) < reserved) return { ok: false, available };
  const hold = Math.min(op.cap, available);
  const steps: MStep[] = NODES.slice(0, op.size).map((node, i) => ({
    node,
    pendingDeps: op.shape === 'chain' && i > 0 ? 1 : 0,
    status: 'pending',
    attempt: 0,
    token: null,
    prevToken: null,
    reserved: 0,
    lostCharge: 0,
    cost: 0,
    started: false,
    charged: false,
  }));
  if (op.preReserve !== null) Object.assign(steps[0]!, { status: 'running', attempt: 1, token: newToken(state, outcome), reserved });
  state.held += hold;
  state.runs.push({ shape: op.shape, cap: op.cap, authorized: hold, status: op.start ? 'running' : 'pending', reserved, spent: 0, charged: 0, held: hold, steps });
  outcome.runs.push(state.runs.length - 1);
  return { ok: true };
}

/** The verdict of a new attempt of `total` spending-and-holding in all. */
function budgetVerdict(run: MRun, total: number, flaws: ModelFlaws): 'ok' | 'cap_exceeded' | 'insufficient_credit' {
  if (flaws.ignoreCap) return 'ok';
  if (total > run.cap) return 'cap_exceeded';
  if (total > run.authorized) return 'insufficient_credit';
  return 'ok';
}

function reserve(state: MState, run: MRun, index: number, op: Extract<Op, { kind: 'reserve' }>, outcome: Outcome, flaws: ModelFlaws): Answer {
  if (run.status !== 'running') return { ok: false, reason: 'run_not_running', owned: false };
  const s = run.steps[index]!;
  if (s.pendingDeps !== 0 || !(s.status === 'pending' || s.status === 'running')) return { ok: false, reason: 'step_not_runnable', owned: false };
  // Taking over a running attempt (its worker presumed dead: the reaper found it stuck) expires
  // it: it is charged its lost charge, the rest of what it held is released.
  const lost = s.status === 'running' && s.started ? Math.min(s.lostCharge, s.reserved) : 0;
  const others = run.reserved - s.reserved;
  const verdict = s.attempt >= MAX_ATTEMPTS ? 'attempts_exhausted' : budgetVerdict(run, run.spent + lost + others + op.estimate, flaws);
  if (verdict !== 'ok' && s.status !== 'running') return { ok: false, reason: verdict, owned: false };
  const held = verdict === 'ok' ? op.estimate : 0;
  run.reserved = others + held;
  run.spent += lost;
  Object.assign(s, { status: 'running', reserved: held, lostCharge: verdict === 'ok' ? Math.min(op.lostCharge, op.estimate) : 0, cost: s.cost + lost, started: true });
  if (verdict === 'ok') s.attempt += 1;
  giveToken(s, newToken(state, outcome));
  return verdict === 'ok' ? { ok: true, attempt: s.attempt } : { ok: false, reason: verdict, owned: true };
}

function owns(s: MStep, token: number | null): boolean {
  return s.status === 'running' && token !== null && s.token === token;
}

function retry(run: MRun, index: number, op: Extract<Resolved, { kind: 'retry' }>, flaws: ModelFlaws): Answer {
  const s = run.steps[index];
  // A token the step no longer carries (taken over) is refused as not the owner, run ended or not.
  if (run.status !== 'running') return { ok: false, reason: op.tokenId !== null && s?.token === op.tokenId ? 'run_not_running' : 'not_owner' };
  if (!s || !owns(s, op.tokenId)) return { ok: false, reason: 'not_owner' };
  if (s.attempt >= MAX_ATTEMPTS) return { ok: false, reason: 'attempts_exhausted' };
  const added = Math.min(op.cost, s.reserved);
  const verdict = budgetVerdict(run, run.spent + added + run.reserved - s.reserved + op.estimate, flaws);
  if (verdict !== 'ok') return { ok: false, reason: verdict };
  run.spent += added;
  run.reserved += op.estimate - s.reserved;
  Object.assign(s, { cost: s.cost + added, reserved: op.estimate, lostCharge: Math.min(op.lostCharge, op.estimate), attempt: s.attempt + 1, started: true });
  return { ok: true, attempt: s.attempt };
}

const NOT_COMMITTED = { committed: false, duplicate: false, ready: [], chargedMicros: 0, clamped: false, remaining: -1, runCompleted: false, next: null, followerCharges: [] };

function remaining(run: MRun): number {
  return run.steps.filter((s) => s.status !== 'completed').length;
}

function readyAmong(run: MRun, indexes: readonly number[]): string[] {
  return [...new Set(indexes)].filter((i) => ready(run.steps[i]!)).map((i) => run.steps[i]!.node).sort();
}

function complete(state: MState, run: MRun, index: number, op: Extract<Resolved, { kind: 'complete' }>, outcome: Outcome, flaws: ModelFlaws): Answer {
  const s = run.steps[index]!;
  const followers = op.followers.slice(0, run.steps.length - index - 1).map((f, i) => ({ ...f, index: index + 1 + i }));
  if (!owns(s, op.tokenId)) {
    if (s.status !== 'completed' || op.tokenId === null || s.token !== op.tokenId) return NOT_COMMITTED;
    // A repeat of this attempt's own commit: nothing changes, the answer is read back.
    const touched = [...dependents(run, index), ...followers.flatMap((f) => dependents(run, f.index))];
    const followerCharges: number[] = [];
    for (const f of followers) {
      const fs = run.steps[f.index]!;
      if (fs.status !== 'completed' || fs.token !== op.tokenId) break;
      followerCharges.push(fs.cost);
    }
    const readyNow = run.status === 'running' ? readyAmong(run, touched) : [];
    return { committed: true, duplicate: true, ready: readyNow, chargedMicros: s.cost, clamped: false, remaining: remaining(run), runCompleted: false, next: null, followerCharges };
  }
  const wasRunning = run.status === 'running';
  const held = s.reserved;
  let spentAdded = Math.min(op.cost, held);
  Object.assign(s, { status: 'completed', cost: s.cost + spentAdded, reserved: 0, lostCharge: 0 });
  let newReserved = run.reserved - held;
  const touched = dependents(run, index);
  for (const d of touched) run.steps[d]!.pendingDeps = Math.max(0, run.steps[d]!.pendingDeps - 1);
  charge(state, run, s);
  const followerCharges: number[] = [];
  for (const f of wasRunning ? followers : []) {
    spentAdded += Math.min(f.cost, f.estimate);
    if (spentAdded > held) throw new Rollback('raised');
    const fs = run.steps[f.index]!;
    if (!ready(fs)) throw new Rollback('raised');
    Object.assign(fs, { status: 'completed', attempt: fs.attempt + 1, cost: fs.cost + Math.min(f.cost, f.estimate), reserved: 0, started: true });
    giveToken(fs, op.tokenId!);
    followerCharges.push(fs.cost);
    for (const d of dependents(run, f.index)) {
      run.steps[d]!.pendingDeps = Math.max(0, run.steps[d]!.pendingDeps - 1);
      touched.push(d);
    }
    charge(state, run, fs);
  }
  const nextIndex = index + 1 < run.steps.length ? index + 1 : -1;
  // The step asked for next may be any ready one, not only one this commit made ready (a group's
  // sibling, reserved on its own after a failure): it is among those the answer calls ready.
  if (op.next && nextIndex >= 0) touched.push(nextIndex);
  const readyNow = readyAmong(run, touched);
  const left = remaining(run);
  const completesRun = left === 0 && op.outputs && wasRunning;
  let next: Answer | null = null;
  if (op.next && wasRunning && nextIndex >= 0 && readyNow.includes(NODES[nextIndex]!)) {
    const spentBefore = run.spent + spentAdded + newReserved;
    const capRoom = run.cap - spentBefore;
    const room = (flaws.ignoreCap ? Number.MAX_SAFE_INTEGER : Math.min(run.cap, run.authorized)) - spentBefore;
    if (op.next.estimate > room) {
      next = { ok: false, reason: op.next.estimate > capRoom ? 'cap_exceeded' : 'insufficient_credit' };
    } else {
      const alone = run.steps.every((o, i) => i === nextIndex || !(o.status === 'running' || ready(o)));
      const lease = op.next.lease && alone ? room - op.next.estimate : 0;
      newReserved += op.next.estimate + lease;
      const ns = run.steps[nextIndex]!;
      Object.assign(ns, { status: 'running', attempt: ns.attempt + 1, reserved: op.next.estimate + lease, lostCharge: 0, started: true });
      giveToken(ns, newToken(state, outcome));
      next = { ok: true, attempt: ns.attempt, leaseMicros: lease };
    }
  }
  run.reserved = newReserved;
  run.spent += spentAdded;
  if (completesRun) run.status = 'completed';
  syncHold(state, run);
  const reservedNext = next !== null && next.ok === true;
  return {
    committed: true,
    duplicate: false,
    ready: wasRunning ? readyNow.filter((n) => !(reservedNext && n === NODES[nextIndex])) : [],
    chargedMicros: s.cost,
    clamped: op.cost > held,
    remaining: left,
    runCompleted: completesRun,
    next,
    followerCharges,
  };
}

function fail(state: MState, run: MRun, index: number, op: Extract<Resolved, { kind: 'fail' }>): Answer {
  const s = run.steps[index]!;
  if (!owns(s, op.tokenId)) return { committed: false, chargedMicros: 0, clamped: false, runFailed: false, skipped: [] };
  const held = s.reserved;
  const added = Math.min(op.cost, held);
  const failsRun = UNFINISHED.includes(run.status);
  Object.assign(s, { status: 'failed', cost: s.cost + added, reserved: 0, lostCharge: 0 });
  run.reserved -= held;
  run.spent += added;
  if (failsRun) run.status = 'failed';
  const skipped = run.steps.filter((o) => o.status === 'pending').map((o) => o.node).sort();
  for (const o of run.steps) if (o.status === 'pending') o.status = 'skipped';
  // Other attempts that hold nothing could charge nothing more: cancelled, their cost so far charged.
  const idle = run.steps.filter((o) => o !== s && o.status === 'running' && o.reserved === 0);
  for (const o of idle) Object.assign(o, { status: 'cancelled', lostCharge: 0 });
  charge(state, run, s);
  for (const o of idle) charge(state, run, o);
  syncHold(state, run);
  return { committed: true, chargedMicros: s.cost, clamped: op.cost > held, runFailed: failsRun, skipped };
}

/** svc_fail_run: the release of everything a run holds (a timeout, a refusal, the reaper). */
function failRun(state: MState, run: MRun, culprit: string | null): Answer {
  const failsRun = UNFINISHED.includes(run.status);
  let released = 0;
  let lostTotal = 0;
  const cancelled: string[] = [];
  const skipped: string[] = [];
  for (const s of run.steps) {
    if (s.status !== 'pending' && s.status !== 'running') continue;
    released += s.reserved;
    if (s.status === 'running') {
      const lost = s.started ? Math.min(s.lostCharge, s.reserved) : 0;
      lostTotal += lost;
      Object.assign(s, { status: 'cancelled', cost: s.cost + lost, reserved: 0, lostCharge: 0 });
      cancelled.push(s.node);
    } else if (s.node === culprit) {
      Object.assign(s, { status: 'failed', reserved: 0 });
    } else {
      Object.assign(s, { status: 'skipped', reserved: 0 });
      skipped.push(s.node);
    }
  }
  run.reserved -= released;
  run.spent += lostTotal;
  if (failsRun) run.status = 'failed';
  for (const s of run.steps) if (s.status === 'cancelled') charge(state, run, s);
  syncHold(state, run);
  return { failed: failsRun, releasedMicros: released, cancelled, skipped };
}

function completeRun(state: MState, run: MRun): boolean {
  if (run.status !== 'running') return false;
  run.status = 'completed';
  syncHold(state, run);
  return true;
}

/**
 * The reaper's sweep (services/runs/sweeps/run-reaper.ts) over this organization with a run timeout of
 * zero when `timeout`: every running run fails with run_timeout; then runs whose steps all
 * completed are completed; what it would re-enqueue (stuck attempts, runnable steps) is
 * answered as run index and node.
 */
function reap(state: MState, timeout: boolean): Answer {
  const timedOut: number[] = [];
  state.runs.forEach((run, i) => {
    if (timeout && run.status === 'running') {
      failRun(state, run, null);
      timedOut.push(i);
    }
  });
  const finished: number[] = [];
  state.runs.forEach((run, i) => {
    if (run.status === 'running' && run.steps.every((s) => s.status === 'completed') && completeRun(state, run)) finished.push(i);
  });
  const stuck: string[] = [];
  const runnable: string[] = [];
  state.runs.forEach((run, i) => {
    if (run.status !== 'running') return;
    for (const s of run.steps) {
      if (s.status === 'running' && s.started) stuck.push(`${i}/${s.node}`);
      if (s.pendingDeps === 0 && (s.status === 'pending' || (s.status === 'running' && !s.started))) runnable.push(`${i}/${s.node}`);
    }
  });
  return { timedOut, finished, stuck: stuck.sort(), runnable: runnable.sort() };
}

export function emptyState(): MState {
  return { balance: 0, held: 0, runs: [], nextToken: 1 };
}
