import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { brokenInvariants, differences, leftOver, overSettled } from './money-checks';
import { apply, emptyState, live, ModelInvariantBroken, resolve, type MState, type ModelFlaws, type Op, type Outcome, type Resolved } from './money-model';
import type { MoneyAccount, MoneyStore, RealOutcome, RealState } from './money-store';

/**
 * M2's fast-check commands: one operation, or two or three at once against the same run and
 * organization (Promise.all: the races are the risk). A concurrent group passes when some serial
 * order of its operations, applied to the model, gives exactly the answers the store gave and the
 * state Postgres holds afterwards (linearizability); every command then checks the invariants.
 */

export interface MoneyModel {
  state: MState;
  flaws: ModelFlaws;
  /** What the commands reached, by operation and answer (see {@link label}): the test checks the paths that matter were taken. */
  seen?: Map<string, number>;
}

/** An answer's name for the tally: the operation and how it went. */
function label(op: Op, answer: Record<string, unknown>, together: boolean): string {
  const next = answer.next as { ok: boolean; reason?: string; leaseMicros?: number } | null | undefined;
  const how =
    'error' in answer ? String(answer.error)
    : 'reason' in answer ? `${String(answer.reason)}${answer.owned ? ' owned' : ''}`
    : answer.duplicate ? 'duplicate'
    : answer.committed === false ? 'not committed'
    : answer.clamped ? 'clamped'
    : next ? `next ${next.ok ? (next.leaseMicros ? 'leased' : 'ok') : next.reason}`
    : answer.ok === false ? 'refused'
    : 'ok';
  const extra = op.kind === 'complete' && Array.isArray(answer.followerCharges) && answer.followerCharges.length > 0 ? ' +followers' : '';
  return `${together ? 'together ' : ''}${op.kind}: ${how}${extra}`;
}

export interface MoneyReal {
  account: MoneyAccount;
  last: RealState;
}

function show(op: Op): string {
  const { kind, ...rest } = op;
  return `${kind}${JSON.stringify(rest)}`;
}

/** JSON's view of an answer: -0 (which node-postgres gives for a negated zero) is 0, like the model's. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

function permutations(n: number): number[][] {
  if (n <= 1) return [[...Array(n).keys()]];
  return permutations(n - 1).flatMap((p) => [...Array(n).keys()].map((i) => [...p.slice(0, i), n - 1, ...p.slice(i)]));
}

/** The model's run for one serial order of a group, or why it does not explain what the store did. */
function explain(model: MoneyModel, ops: readonly Resolved[], real: readonly RealOutcome[], after: RealState, account: MoneyAccount, order: readonly number[]) {
  let state = model.state;
  const runIds = [...account.runIds];
  const tokens = new Map(account.tokens);
  for (const i of order) {
    let outcome: Outcome;
    try {
      ({ state, outcome } = apply(state, ops[i]!, model.flaws));
    } catch (err) {
      if (err instanceof ModelInvariantBroken) return { why: [`model: ${err.message}`] };
      throw err;
    }
    const got = real[i]!;
    if (!isDeepStrictEqual(plain(outcome.answer), plain(got.answer)) || outcome.tokens.length !== got.tokens.length || outcome.runs.length !== got.runs.length) {
      return { why: [`${show(ops[i]!)}: model answers ${JSON.stringify(outcome.answer)}, store ${JSON.stringify(got.answer)}`] };
    }
    outcome.tokens.forEach((id, k) => tokens.set(id, got.tokens[k]!));
    outcome.runs.forEach((index, k) => (runIds[index] = got.runs[k]!));
  }
  const diffs = differences(state, after, runIds, tokens);
  return diffs.length > 0 ? { why: diffs } : { state, runIds, tokens };
}

/** Runs `ops` at once (or the one alone) and checks the store against the model; throws what is wrong. */
export async function performAndCheck(model: MoneyModel, real: MoneyReal, ops: readonly Op[]): Promise<void> {
  const resolved = ops.map((op) => resolve(model.state, op));
  const outcomes = await Promise.all(resolved.map((op) => real.account.perform(op, model.state)));
  const after = await real.account.read();
  const problems: string[] = [];
  let explained = false;
  for (const order of permutations(ops.length)) {
    const result = explain(model, resolved, outcomes, after, real.account, order);
    if ('state' in result && result.state) {
      model.state = result.state;
      outcomes.forEach((o, i) => {
        const key = label(resolved[i]!, o.answer, ops.length > 1);
        model.seen?.set(key, (model.seen.get(key) ?? 0) + 1);
      });
      result.runIds.forEach((id, i) => (real.account.runIds[i] = id));
      for (const [id, token] of result.tokens) real.account.tokens.set(id, token);
      explained = true;
      break;
    }
    problems.push(`order ${order.map((i) => show(ops[i]!)).join(' → ')}: ${result.why.join('; ')}`);
  }
  if (!explained) {
    const what = ops.length === 1 ? 'the store disagrees with the model' : 'no serial order of the concurrent operations explains what the store did';
    throw new Error(`M2: ${what}:\n  ${problems.join('\n  ')}`);
  }
  const broken = [...brokenInvariants(after), ...(ops.length === 1 ? overSettled(real.last, after) : [])];
  if (broken.length > 0) throw new Error(`M2: invariants broken after ${ops.map(show).join(' ‖ ')}:\n  ${broken.join('\n  ')}`);
  real.last = after;
}

/** One command of a sequence: an operation, or a concurrent group of them. */
export class MoneyCommand implements fc.AsyncCommand<MoneyModel, MoneyReal> {
  constructor(readonly ops: readonly Op[]) {}

  check(model: Readonly<MoneyModel>): boolean {
    return model.state.runs.length > 0 || this.ops.every((op) => !('run' in op));
  }

  run(model: MoneyModel, real: MoneyReal): Promise<void> {
    return performAndCheck(model, real, this.ops);
  }

  toString(): string {
    return this.ops.length === 1 ? show(this.ops[0]!) : `together(${this.ops.map(show).join(', ')})`;
  }
}

const money = (max: number) => fc.integer({ min: 0, max });
const runIndex = fc.nat({ max: 7 });
const node = fc.nat({ max: 2 });
const token = fc.oneof({ arbitrary: fc.constant('current' as const), weight: 4 }, { arbitrary: fc.constant('stale' as const), weight: 1 });

// Credits from a few micro-USD (a balance that covers less than a cap) to several caps' worth.
const creditAmount = fc.oneof(fc.integer({ min: 1, max: 600 }), fc.integer({ min: 1000, max: 4000 }));
const credit: fc.Arbitrary<Op> = fc.record({ kind: fc.constant('credit' as const), amount: creditAmount });
const createRun: fc.Arbitrary<Op> = fc
  .record({
    cap: fc.oneof(money(1000), fc.constant(1000)),
    shape: fc.constantFrom('parallel' as const, 'chain' as const),
    size: fc.integer({ min: 1, max: 3 }),
    start: fc.oneof({ arbitrary: fc.constant(true), weight: 5 }, { arbitrary: fc.constant(false), weight: 1 }),
    preReserve: fc.option(money(400), { freq: 2, nil: null }),
  })
  // createRun refuses reservations in a run not stored running, or beyond its cap, before any SQL.
  .map((r) => ({ kind: 'createRun' as const, ...r, preReserve: r.start && r.preReserve !== null ? Math.min(r.preReserve, r.cap) : null }));

/** The operations on one run; `run` is replaced by the group's when they run together. */
const onRun: fc.Arbitrary<Op>[] = [
  fc.record({ kind: fc.constant('markRunning' as const), run: runIndex }),
  fc.record({ kind: fc.constant('reserve' as const), run: runIndex, node, estimate: money(400), lostCharge: money(400) }),
  fc.record({ kind: fc.constant('retry' as const), run: runIndex, node, token, cost: money(500), estimate: money(400), lostCharge: money(400) }),
  fc.record({
    kind: fc.constant('complete' as const),
    run: runIndex,
    node,
    token,
    cost: money(500),
    outputs: fc.boolean(),
    next: fc.option(fc.record({ estimate: money(400), lease: fc.boolean() }), { freq: 2, nil: null }),
    followers: fc.array(fc.record({ cost: money(300), estimate: money(300) }), { maxLength: 2 }),
  }),
  fc.record({ kind: fc.constant('fail' as const), run: runIndex, node, token, cost: money(500) }),
  fc.record({ kind: fc.constant('failRun' as const), run: runIndex, culprit: fc.option(node, { freq: 3, nil: null }) }),
  fc.record({ kind: fc.constant('completeRun' as const), run: runIndex }),
];
// One sweep in four with a run timeout of zero (every running run expires); the rest find and complete finished runs.
const reap: fc.Arbitrary<Op> = fc.record({ kind: fc.constant('reap' as const), timeout: fc.oneof({ arbitrary: fc.constant(true), weight: 1 }, { arbitrary: fc.constant(false), weight: 3 }) });

const weighted = (arbitrary: fc.Arbitrary<Op>, weight: number) => ({ arbitrary, weight });
const single: fc.Arbitrary<Op> = fc.oneof(
  weighted(credit, 4),
  weighted(createRun, 4),
  ...onRun.map((arbitrary, i) => weighted(arbitrary, [1, 12, 3, 12, 3, 1, 1][i]!)),
  weighted(reap, 2),
);
const inGroup: fc.Arbitrary<Op> = fc.oneof(weighted(credit, 1), weighted(createRun, 2), ...onRun.map((arbitrary, i) => weighted(arbitrary, [1, 6, 2, 6, 2, 2, 1][i]!)));
const group = fc
  .tuple(runIndex, fc.array(inGroup, { minLength: 2, maxLength: 3 }))
  .map(([run, ops]) => ops.map((op) => ('run' in op ? { ...op, run } : op)));

/** Sequences of commands: mostly single operations, one in four a concurrent group. */
export function moneyCommands(maxCommands: number) {
  const command = fc.oneof({ arbitrary: single.map((op) => new MoneyCommand([op])), weight: 3 }, { arbitrary: group.map((ops) => new MoneyCommand(ops)), weight: 1 });
  return fc.commands([command], { maxCommands, size: 'max' });
}

/**
 * The property: on a fresh organization, the commands keep the store equal to the model and the
 * invariants true; then every run is released (failed) and nothing may stay reserved or held.
 */
export function moneyProperty(store: MoneyStore, options: { maxCommands: number; flaws?: ModelFlaws; seen?: Map<string, number> }) {
  return fc.asyncProperty(fc.option(creditAmount, { nil: null }), moneyCommands(options.maxCommands), async (opening, cmds) => {
    const account = await store.newAccount();
    const model: MoneyModel = { state: emptyState(), flaws: options.flaws ?? {}, seen: options.seen };
    const real: MoneyReal = { account, last: await account.read() };
    try {
      if (opening !== null) await performAndCheck(model, real, [{ kind: 'credit', amount: opening }]);
      await fc.asyncModelRun(() => ({ model, real }), cmds);
      // Each release goes to the first run still live (see resolve), so one per run releases them all.
      for (let i = 0; i < model.state.runs.length && model.state.runs.some(live); i++) await performAndCheck(model, real, [{ kind: 'failRun', run: 0, culprit: null }]);
      const left = leftOver(real.last);
      if (left.length > 0) throw new Error(`M2: left after every run was released:\n  ${left.join('\n  ')}`);
    } finally {
      await account.abandon();
    }
  });
}
