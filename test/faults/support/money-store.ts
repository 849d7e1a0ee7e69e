import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDatabase, LedgerRepository, RunRecoveryRepository, RunRepository, StepRepository, type Database } from '../../../services/store';
import { isAppError } from '../../../services/platform/app-error';
import { MAX_ATTEMPTS, NODES, type Answer, type MState, type Resolved } from './money-model';

/**
 * M2's real side: the model's operations (money-model.ts) performed by the store's own
 * repositories against a real Postgres, and the organization's money read back in one query, so
 * the test can compare both and check the invariants of docs/money.md on what Postgres holds.
 */

/** What one operation made the store answer, with the ids it created (attempt tokens, run ids) in the model's order. */
export interface RealOutcome {
  answer: Answer;
  tokens: string[];
  runs: string[];
}

export interface RealStep {
  node: string;
  status: string;
  attempt: number;
  token: string | null;
  pendingDeps: number;
  reserved: number;
  lostCharge: number;
  cost: number;
  started: boolean;
  /** Its run_charge ledger entries (amounts charged, positive). */
  charges: number[];
}

export interface RealRun {
  id: string;
  cap: number;
  authorized: number | null;
  status: string;
  reserved: number;
  spent: number;
  charged: number;
  held: number;
  /** Minus the sum of the run's run_charge ledger entries. */
  ledgerCharged: number;
  steps: RealStep[];
}

export interface RealState {
  balance: number;
  held: number;
  /** The sum of the organization's ledger entries. */
  ledger: number;
  runs: RealRun[];
}

const READ_STATE = `
SELECT json_build_object(
  -- The balance and holds the model keeps: the row's, less the charges of unfinished runs it does
  -- not show yet (docs/money.md, Deferred settlement).
  'balance', o.balance_micros - d.deferred, 'held', o.held_micros - d.deferred,
  'ledger', (SELECT COALESCE(sum(l.amount_micros), 0) FROM ledger_entries l WHERE l.org_id = o.id),
  'runs', (SELECT COALESCE(json_agg(json_build_object(
      'id', r.id, 'cap', r.cap_micros, 'authorized', r.authorized_micros, 'status', r.status, 'reserved', r.reserved_micros,
      'spent', r.spent_micros, 'charged', r.charged_micros, 'held', r.held_micros,
      'ledgerCharged', (SELECT COALESCE(-sum(l.amount_micros), 0) FROM ledger_entries l WHERE l.run_id = r.id AND l.kind = 'run_charge'),
      'steps', (SELECT json_agg(json_build_object(
          'node', s.node_id, 'status', s.status, 'attempt', s.attempt, 'token', s.attempt_token, 'pendingDeps', s.pending_deps,
          'reserved', s.reserved_micros, 'lostCharge', s.lost_charge_micros, 'cost', s.cost_micros, 'started', s.started_at IS NOT NULL,
          'charges', (SELECT COALESCE(json_agg(-l.amount_micros), '[]') FROM ledger_entries l WHERE l.step_id = s.id AND l.kind = 'run_charge'))
        ORDER BY s.node_id) FROM steps s WHERE s.run_id = r.id)
    ) ORDER BY r.created_at, r.id), '[]') FROM runs r WHERE r.org_id = o.id)
) AS state
FROM organizations o
CROSS JOIN LATERAL (SELECT COALESCE(sum(charged_micros - settled_micros), 0) AS deferred FROM runs WHERE org_id = o.id) d
WHERE o.id = $1::uuid`;

/** A Postgres error raised by a function on purpose (RAISE EXCEPTION: P0001) or by the money trigger (23514). */
function refusedByDatabase(err: unknown): string | null {
  const code = (err as { code?: unknown }).code;
  if (code === 'P0001') return 'raised';
  if (code === '23514') return 'check_violation';
  return null;
}

const sorted = (values: readonly string[] | null | undefined): string[] => [...(values ?? [])].sort();

/** The store's repositories over one test database. */
export class MoneyStore {
  readonly runs: RunRepository;
  readonly steps: StepRepository;
  readonly ledger: LedgerRepository;
  readonly recovery: RunRecoveryRepository;

  private constructor(readonly database: Database) {
    this.runs = new RunRepository(database);
    this.steps = new StepRepository(database);
    this.ledger = new LedgerRepository(database.prisma);
    this.recovery = new RunRecoveryRepository(database.pool);
  }

  /** Enough connections for a concurrent group of operations to really run at once. */
  static open(url: string): MoneyStore {
    return new MoneyStore(createDatabase(url, { poolSize: 8 }));
  }

  /** A fresh organization with a zero balance and no ledger, and a user to own its runs: one per sequence. */
  async newAccount(): Promise<MoneyAccount> {
    const suffix = randomUUID();
    const org = await this.database.prisma.organization.create({ data: { slug: `m2-${suffix}`, name: 'M2' } });
    const user = await this.database.prisma.user.create({ data: { email: `m2-${suffix}@example.test`, name: 'M2' } });
    return new MoneyAccount(this, org.id, user.id);
  }

  close(): Promise<void> {
    return this.database.close();
  }
}

/** One sequence's organization: performs resolved operations and reads its money back. */
export class MoneyAccount {
  /** The model's run indexes and attempt token ids, bound to the store's ids as operations create them. */
  readonly runIds: string[] = [];
  readonly tokens = new Map<number, string>();

  constructor(
    private readonly store: MoneyStore,
    readonly orgId: string,
    private readonly userId: string,
  ) {}

  async read(): Promise<RealState> {
    const { rows } = await this.store.database.pool.query<{ state: RealState }>(READ_STATE, [this.orgId]);
    return rows[0]!.state;
  }

  /** Leaves no run of this sequence unfinished, whatever happened, so the reaper's queries of later sequences see only their own. */
  async abandon(): Promise<void> {
    await this.store.database.pool.query(`UPDATE runs SET status = 'failed' WHERE org_id = $1::uuid AND status IN ('pending', 'running')`, [this.orgId]);
  }

  private token(id: number | null): string {
    return (id === null ? undefined : this.tokens.get(id)) ?? randomUUID();
  }

  /** Performs `op` (resolved against `model`, the state before its group) with the store's repositories. */
  async perform(op: Resolved, model: MState): Promise<RealOutcome> {
    const { runs, steps, ledger } = this.store;
    const out: RealOutcome = { answer: {}, tokens: [], runs: [] };
    if (op.kind === 'credit') {
      out.answer = { balance: (await ledger.credit(this.orgId, op.amount, 'M2 credit')).balanceMicros };
      return out;
    }
    if (op.kind === 'createRun') return this.createRun(op);
    if (op.kind === 'reap') {
      out.answer = await this.reap(op.timeout);
      return out;
    }
    const runId = this.runIds[op.runIndex]!;
    const shape = model.runs[op.runIndex]!;
    const size = shape.steps.length;
    const index = Math.max(0, op.nodeIndex);
    const nodeId = NODES[index]!;
    const dependentsOf = (i: number) => (shape.shape === 'chain' && i + 1 < size ? [NODES[i + 1]!] : []);
    switch (op.kind) {
      case 'markRunning':
        out.answer = { ok: await runs.markRunning(runId) };
        return out;
      case 'completeRun':
        out.answer = { completed: await runs.completeRun(runId, {}) };
        return out;
      case 'failRun': {
        const culprit = op.culprit === null ? undefined : NODES[op.culprit % size];
        const r = await runs.failRun(runId, { code: 'internal', message: 'M2: released' }, { nodeId: culprit });
        out.answer = { failed: r.failed, releasedMicros: r.releasedMicros, cancelled: sorted(r.cancelled), skipped: sorted(r.skipped) };
        return out;
      }
      case 'reserve': {
        const r = await steps.reserve({ runId, nodeId, estimateMicros: op.estimate, lostChargeMicros: op.lostCharge, maxAttempts: MAX_ATTEMPTS });
        if (r.attemptToken !== undefined) out.tokens.push(r.attemptToken);
        out.answer = r.ok ? { ok: true, attempt: r.attempt } : { ok: false, reason: r.reason, owned: r.attemptToken !== undefined };
        return out;
      }
      case 'retry':
        out.answer = {
          ...(await steps.retryAttempt({
            runId,
            nodeId,
            attemptToken: this.token(op.tokenId),
            costMicros: op.cost,
            estimateMicros: op.estimate,
            lostChargeMicros: op.lostCharge,
            maxAttempts: MAX_ATTEMPTS,
          })),
        };
        return out;
      case 'fail': {
        const r = await steps.failStep({ runId, nodeId, attemptToken: this.token(op.tokenId), costMicros: op.cost, error: { code: 'internal', message: 'M2: failed' }, ms: 1 });
        out.answer = { ...r, skipped: sorted(r.skipped) };
        return out;
      }
      case 'complete': {
        const followers = op.followers.slice(0, size - index - 1).map((f, i) => ({
          nodeId: NODES[index + 1 + i]!,
          costMicros: f.cost,
          estimateMicros: f.estimate,
          output: {},
          ms: 1,
          dependents: dependentsOf(index + 1 + i),
        }));
        try {
          const r = await steps.completeStep({
            runId,
            nodeId,
            attemptToken: this.token(op.tokenId),
            costMicros: op.cost,
            output: {},
            ms: 1,
            dependents: dependentsOf(index),
            runOutputs: op.outputs ? {} : undefined,
            next: op.next && index + 1 < size ? { nodeId: NODES[index + 1]!, estimateMicros: op.next.estimate, lease: op.next.lease } : undefined,
            followers,
          });
          if (r.next?.ok) out.tokens.push(r.next.attemptToken);
          const next = r.next === undefined ? null : r.next.ok ? { ok: true, attempt: r.next.attempt, leaseMicros: r.next.leaseMicros } : { ok: false, reason: r.next.reason };
          out.answer = { ...r, ready: sorted(r.ready), next };
        } catch (err) {
          const refused = refusedByDatabase(err);
          if (refused === null) throw err;
          out.answer = { error: refused };
        }
        return out;
      }
    }
  }

  private async createRun(op: Extract<Resolved, { kind: 'createRun' }>): Promise<RealOutcome> {
    const token = randomUUID();
    try {
      const id = await this.store.runs.createRun({
        orgId: this.orgId,
        userId: this.userId,
        tokenId: null,
        definition: {},
        inputs: {},
        capMicros: op.cap,
        start: op.start,
        requireCredit: true,
        steps: NODES.slice(0, op.size).map((nodeId, i) => ({
          nodeId,
          pendingDeps: op.shape === 'chain' && i > 0 ? 1 : 0,
          reservation: i === 0 && op.preReserve !== null ? { estimateMicros: op.preReserve, attemptToken: token } : undefined,
        })),
      });
      return { answer: { ok: true }, tokens: op.preReserve === null ? [] : [token], runs: [id] };
    } catch (err) {
      if (!isAppError(err, 'insufficient_credit')) throw err;
      return { answer: { ok: false, available: err.details?.balanceMicros as number }, tokens: [], runs: [] };
    }
  }

  /**
   * What the reaper's sweep does (services/runs/sweeps/run-reaper.ts), with its own queries, over this
   * organization's runs: with `timeout`, every running run is past a run timeout of zero and
   * fails; finished runs are completed; the steps it would re-enqueue are answered.
   */
  private async reap(timeout: boolean): Promise<Answer> {
    const { recovery, runs } = this.store;
    const ours = (runId: string) => this.runIds.indexOf(runId);
    const future = () => new Date(Date.now() + 60_000);
    const timedOut: number[] = [];
    if (timeout) {
      for (const runId of await recovery.findTimedOut({ startedBefore: future(), limit: 1000 })) {
        if (ours(runId) < 0) continue;
        await runs.failRun(runId, { code: 'run_timeout', message: 'M2: the run timed out' });
        timedOut.push(ours(runId));
      }
    }
    // Steps' finished_at is stored to the millisecond, rounded: a step finished within the last
    // millisecond may read as not yet finished against now() with a grace of zero.
    await sleep(2);
    const finished: number[] = [];
    for (const runId of await recovery.findFinishable({ graceMs: 0, limit: 1000 })) {
      if (ours(runId) >= 0 && (await runs.completeRun(runId, {}))) finished.push(ours(runId));
    }
    const key = (s: { runId: string; nodeId: string }) => `${ours(s.runId)}/${s.nodeId}`;
    const stuck = (await recovery.findStuck({ startedBefore: future(), limit: 1000 })).filter((s) => ours(s.runId) >= 0).map(key);
    const runnable = (await recovery.listRunnable({ limit: 1000 })).filter((s) => ours(s.runId) >= 0).map(key);
    return { timedOut: timedOut.sort((a, b) => a - b), finished: finished.sort((a, b) => a - b), stuck: stuck.sort(), runnable: runnable.sort() };
  }
}
