import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'pg';
import { parseSse } from '../../support/sse';
import { loadOrgs, loadRunLedgers, loadRuns, loadSteps, type RunRow, type StepRow } from './checker-sql';
import { parseEvents, repeatedCompletions, streamViolations, terminalOutputs } from './checker-streams';
import type { ProviderFake } from './provider-fake';
import type { ClientRecord } from './run-client';

/**
 * The checker run after every scenario: the service's guarantees over the database (SQL in
 * checker-sql.ts) and the API, and the provider fake's record as the truth about money. It
 * returns every broken guarantee as a sentence naming the run or step and the numbers.
 *
 * Runs are tied to the fake's calls by the `tag:<word>` their definition or inputs carry (give
 * each run its own tag). Provider-backed steps are the `openai-chat` ones; per run, with B what
 * the fake billed for its tag and C what the ledger charged its provider-backed steps:
 * B ≤ C ≤ B + Σ lost charges, where an attempt that may have been lost (every attempt but the
 * last of a step, and the last of a cancelled step) may have been charged its worst-case estimate
 * (services/runs/steps/step-result.ts lostChargeOf) without a bill; C = B when no attempt was lost.
 */

export interface CheckOptions {
  databaseUrl?: string;
  pool?: Pool;
  apiUrl: string;
  token: string;
  provider?: ProviderFake;
  clients: readonly ClientRecord[];
  /**
   * Runs to check; default: every run the clients saw (and, with a provider, every run carrying
   * one of their tags), or every run in the database when no client saw one.
   */
  runIds?: readonly string[];
  /** Balances given outside the ledger (test fixtures seed a balance directly), by organization id. */
  openingBalances?: Readonly<Record<string, number>>;
  /** Prices of local nodes by `uses`, micro-USD a completed step; nodes not named are not compared. Default: input, output and const at 0. */
  localPrices?: Readonly<Record<string, number>>;
  /** Wait up to this long for the runs to be terminal with nothing held or reserved before checking (default 0). */
  settleMs?: number;
}

export interface CheckCounts {
  runs: number;
  completed: number;
  failed: number;
  steps: number;
  /** Runs carrying a client's tag that no client learnt of (a request answered 5xx had created them). */
  unacknowledgedRuns: number;
  /** Attempts beyond the first of a step, plus the last of a failed or cancelled step: the ones that may have been charged their worst case. */
  possiblyLostAttempts: number;
  clients: number;
  clientResumes: number;
  clientsGaveUp: number;
  providerCalls: number;
  billedMicros: number;
  chargedMicros: number;
}

export interface CheckResult {
  violations: string[];
  counts: CheckCounts;
}

const PROVIDER_NODES: readonly string[] = ['openai-chat'];
const TERMINAL: readonly string[] = ['completed', 'failed', 'cancelled'];
const FREE_LOCAL: Readonly<Record<string, number>> = { input: 0, output: 0, const: 0 };

interface DefinedNode {
  id: string;
  uses: string;
  inputs: Record<string, unknown>;
}

function nodesOf(definition: unknown): Map<string, DefinedNode> {
  const nodes = (definition as { nodes?: unknown } | null)?.nodes;
  const list = Array.isArray(nodes) ? (nodes as Partial<DefinedNode>[]) : [];
  return new Map(list.filter((x) => typeof x.id === 'string').map((x) => [x.id!, { id: x.id!, uses: String(x.uses), inputs: x.inputs ?? {} }]));
}

/** JSON with object keys sorted: outputs compared by value, whatever realm or key order they came from. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));
}

function tagOf(run: RunRow): string | undefined {
  return /tag:([^\s"\\]+)/.exec(JSON.stringify(run.definition))?.[1] ?? /tag:([^\s"\\]+)/.exec(JSON.stringify(run.inputs ?? null))?.[1];
}

async function runLog(apiUrl: string, token: string, runId: string): Promise<{ status: number; messages: ReturnType<typeof parseSse> }> {
  const res = await fetch(`${apiUrl}/v1/runs/${runId}/events`, { headers: { Authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(15_000) });
  if (res.status !== 200) return { status: res.status, messages: [] };
  return { status: 200, messages: parseSse(await res.text()) };
}

async function runRecord(apiUrl: string, token: string, runId: string): Promise<{ status: number; outputs?: unknown; state?: string }> {
  const res = await fetch(`${apiUrl}/v1/runs/${runId}`, { headers: { Authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(15_000) });
  if (res.status !== 200) return { status: res.status };
  const body = (await res.json()) as { outputs?: unknown; status?: string };
  return { status: 200, outputs: body.outputs, state: body.status };
}

function settled(run: RunRow): boolean {
  return TERMINAL.includes(run.status) && run.reservedMicros === 0 && run.heldMicros === 0;
}

function moneyOfRun(run: RunRow, steps: readonly StepRow[], ledgerCharged: number, orphans: number): string[] {
  const v: string[] = [];
  const r = `run ${run.id}`;
  if (run.spentMicros > run.capMicros) v.push(`${r}: spent ${run.spentMicros} > cap ${run.capMicros} micro-USD`);
  if (run.spentMicros + run.reservedMicros > run.capMicros) v.push(`${r}: spent ${run.spentMicros} + reserved ${run.reservedMicros} > cap ${run.capMicros} micro-USD`);
  const stepCosts = steps.reduce((sum, s) => sum + s.costMicros, 0);
  if (stepCosts !== run.spentMicros) v.push(`${r}: spent ${run.spentMicros} but its steps cost ${stepCosts} micro-USD`);
  if (ledgerCharged !== run.chargedMicros) v.push(`${r}: charged_micros ${run.chargedMicros} but its ledger run_charge rows add up to ${ledgerCharged} micro-USD`);
  if (orphans > 0) v.push(`${r}: ${orphans} run_charge row(s) name no step of the run`);
  if (TERMINAL.includes(run.status)) {
    if (run.reservedMicros !== 0) v.push(`${r} is ${run.status} but still reserves ${run.reservedMicros} micro-USD`);
    if (run.heldMicros !== 0) v.push(`${r} is ${run.status} but still holds ${run.heldMicros} micro-USD`);
    if (ledgerCharged !== run.spentMicros) v.push(`${r} is ${run.status}: spent ${run.spentMicros} but the ledger charged ${ledgerCharged} micro-USD`);
  }
  for (const s of steps) {
    const st = `${r} step ${s.nodeId}`;
    if (s.ledgerRows > 1) v.push(`${st}: charged ${s.ledgerRows} times in the ledger (committed twice)`);
    // A stopped run's lost attempts are settled within STEP_STUCK_SECONDS plus a reaper interval (docs/runs.md, Crashes and lost work).
    if (TERMINAL.includes(run.status) && ['pending', 'queued', 'running'].includes(s.status)) v.push(`${st} is still ${s.status} in a ${run.status} run`);
    if (TERMINAL.includes(run.status) && s.reservedMicros !== 0) v.push(`${st}: still reserves ${s.reservedMicros} micro-USD in a ${run.status} run`);
    if (['completed', 'failed', 'cancelled'].includes(s.status) && s.ledgerMicros !== s.costMicros) v.push(`${st} (${s.status}): cost ${s.costMicros} but the ledger charged ${s.ledgerMicros} micro-USD`);
  }
  return v;
}

/**
 * Attempts a step may have been charged its worst case for without a bill: every attempt but its
 * last (lost, timed out, or cut off and retried), and the last of a step that failed or was
 * cancelled (timed out, cut off or aborted: docs/runs.md, what each outcome costs).
 */
function possiblyLost(step: StepRow): number {
  return Math.max(0, step.attempt - 1) + ((step.status === 'cancelled' || step.status === 'failed') && step.attempt > 0 ? 1 : 0);
}

/** A run's provider-backed charge, compared with the fake's bill per tag (several runs may share one). */
interface ProviderShare {
  tag: string;
  runId: string;
  charged: number;
  /** What its possibly lost attempts may have been charged without a bill: their worst cases. */
  allowance: number;
}

function providerShare(run: RunRow, steps: readonly StepRow[], provider: ProviderFake, localPrices: Readonly<Record<string, number>>): { violations: string[]; share?: ProviderShare } {
  const v: string[] = [];
  const nodes = nodesOf(run.definition);
  const providerSteps = steps.filter((s) => PROVIDER_NODES.includes(nodes.get(s.nodeId)?.uses ?? ''));
  for (const s of steps) {
    const uses = nodes.get(s.nodeId)?.uses ?? '';
    const price = localPrices[uses];
    if (price !== undefined && s.status === 'completed' && s.costMicros !== price) v.push(`run ${run.id} step ${s.nodeId} (${uses}): charged ${s.costMicros}, its price is ${price} micro-USD`);
  }
  if (providerSteps.length === 0) return { violations: v };
  const tag = tagOf(run);
  const charged = providerSteps.reduce((sum, s) => sum + s.ledgerMicros, 0);
  if (tag === undefined) {
    v.push(`run ${run.id}: has provider-backed steps but no tag:<word> in its definition, so its charge (${charged} micro-USD) cannot be compared with the provider's bill`);
    return { violations: v };
  }
  let allowance = 0;
  for (const s of providerSteps) {
    const lost = possiblyLost(s);
    if (lost === 0) continue;
    const inputs = nodes.get(s.nodeId)!.inputs;
    // A templated input is unknown here: the run's cap bounds any estimate the service allowed.
    let estimate = run.capMicros;
    if (!JSON.stringify(inputs).includes('${')) {
      try {
        estimate = provider.estimateMicros(inputs);
      } catch {
        estimate = run.capMicros;
      }
    }
    allowance += lost * estimate;
  }
  return { violations: v, share: { tag, runId: run.id, charged, allowance } };
}

/** B ≤ C ≤ B + allowance for the runs of one tag (one run, unless a request answered 5xx had created one the client never learnt of). */
function tagMoney(tag: string, shares: readonly ProviderShare[], provider: ProviderFake): { violations: string[]; billed: number; charged: number } {
  const v: string[] = [];
  const billed = provider.billedMicrosFor(tag);
  const charged = shares.reduce((sum, s) => sum + s.charged, 0);
  const allowance = shares.reduce((sum, s) => sum + s.allowance, 0);
  const who = `run${shares.length > 1 ? 's' : ''} ${shares.map((s) => s.runId).join(', ')} (tag ${tag})`;
  if (charged < billed) v.push(`${who}: charged ${charged} micro-USD for provider calls the provider billed ${billed} (a provider call once made is paid)`);
  if (allowance === 0 && charged !== billed) v.push(`${who}: charged ${charged} micro-USD, the provider billed ${billed}, and no attempt was lost`);
  if (allowance > 0 && charged > billed + allowance) v.push(`${who}: charged ${charged} micro-USD > billed ${billed} + lost charges ${allowance}`);
  return { violations: v, billed, charged };
}

async function clientViolations(options: CheckOptions, runsById: Map<string, RunRow>): Promise<string[]> {
  const v: string[] = [];
  for (const [i, client] of options.clients.entries()) {
    const who = `client ${i}${client.runId ? ` (run ${client.runId})` : ''}`;
    if (client.gaveUp) v.push(`${who}: gave up after ${client.resumes} resume(s): ${client.gaveUp}`);
    if (client.httpStatus !== 200 && client.messages.length === 0) continue;
    v.push(...streamViolations(who, client.messages));
    if (!client.runId) continue;
    const terminal = terminalOutputs(parseEvents(client.messages).events);
    if (terminal?.type !== 'run.completed') continue;
    const record = await runRecord(options.apiUrl, options.token, client.runId);
    if (record.status !== 200) v.push(`${who}: GET /v1/runs/${client.runId} answered ${record.status}`);
    else if (canonical(record.outputs) !== canonical(terminal.outputs)) {
      v.push(`${who}: GET /v1/runs/:id outputs ${JSON.stringify(record.outputs)?.slice(0, 200)} differ from the stream's run.completed outputs ${JSON.stringify(terminal.outputs)?.slice(0, 200)}`);
    }
    if (!runsById.has(client.runId)) v.push(`${who}: the run is not in the database`);
  }
  return v;
}

export async function checkInvariants(options: CheckOptions): Promise<CheckResult> {
  const ownPool = options.pool ? undefined : new Pool({ connectionString: options.databaseUrl, max: 2 });
  const pool = options.pool ?? ownPool!;
  try {
    const clientRuns = options.clients.map((c) => c.runId).filter((id): id is string => id !== undefined);
    const wanted = options.runIds ?? (clientRuns.length > 0 ? [...new Set(clientRuns)] : undefined);
    // Runs carrying a client's tag that no client learnt of: created by a request answered 5xx
    // (the commit's answer lost), which the client then sent again. They run and are paid like any.
    // Looked up once (every client has returned, so no such run is created later); the settling
    // loop below then reloads the runs by id, not the whole table.
    let checked = wanted;
    if (options.provider && wanted !== undefined) {
      const known = await loadRuns(pool, wanted);
      const tags = new Set(known.map(tagOf).filter((t): t is string => t !== undefined));
      const ids = new Set(wanted);
      const unacknowledged = (await loadRuns(pool, undefined)).filter((r) => !ids.has(r.id) && tags.has(tagOf(r) ?? ''));
      checked = [...wanted, ...unacknowledged.map((r) => r.id)];
    }
    let runs = await loadRuns(pool, checked);
    const until = Date.now() + (options.settleMs ?? 0);
    while (Date.now() < until && !runs.every(settled)) {
      await sleep(100);
      runs = await loadRuns(pool, checked);
    }
    const ids = runs.map((r) => r.id);
    const runsById = new Map(runs.map((r) => [r.id, r]));
    const steps = await loadSteps(pool, ids);
    const ledgers = new Map((await loadRunLedgers(pool, ids)).map((l) => [l.runId, l]));
    const violations: string[] = [];
    const counts: CheckCounts = {
      runs: runs.length,
      unacknowledgedRuns: (checked?.length ?? 0) - (wanted?.length ?? 0),
      completed: 0,
      failed: 0,
      steps: steps.length,
      possiblyLostAttempts: 0,
      clients: options.clients.length,
      clientResumes: 0,
      clientsGaveUp: 0,
      providerCalls: options.provider?.calls.length ?? 0,
      billedMicros: 0,
      chargedMicros: 0,
    };
    const shares = new Map<string, ProviderShare[]>();
    for (const id of wanted ?? []) if (!runsById.has(id)) violations.push(`run ${id}: not in the database`);
    for (const run of runs) {
      if (run.status === 'completed') counts.completed += 1;
      if (run.status === 'failed') counts.failed += 1;
      if (!TERMINAL.includes(run.status)) violations.push(`run ${run.id}: not terminal (status ${run.status})`);
      const runSteps = steps.filter((s) => s.runId === run.id);
      counts.possiblyLostAttempts += runSteps.reduce((sum, s) => sum + possiblyLost(s), 0);
      const ledger = ledgers.get(run.id);
      violations.push(...moneyOfRun(run, runSteps, ledger?.chargedByLedgerMicros ?? 0, ledger?.orphanRows ?? 0));
      if (options.provider) {
        const { violations: local, share } = providerShare(run, runSteps, options.provider, options.localPrices ?? FREE_LOCAL);
        violations.push(...local);
        if (share) shares.set(share.tag, [...(shares.get(share.tag) ?? []), share]);
      }
      // The run's own log, replayed whole: what any client resuming from 0 would get (an
      // unfinished run's would be followed live, so only terminal runs are read).
      if (!TERMINAL.includes(run.status)) continue;
      const log = await runLog(options.apiUrl, options.token, run.id);
      if (log.status !== 200) {
        violations.push(`run ${run.id}: GET /v1/runs/:id/events answered ${log.status}`);
        continue;
      }
      violations.push(...streamViolations(`run ${run.id}'s log`, log.messages));
      for (const [nodeId, times] of repeatedCompletions(parseEvents(log.messages).events)) violations.push(`run ${run.id} step ${nodeId}: step.completed ${times} times in the run's log (committed twice)`);
    }
    for (const [tag, tagShares] of shares) {
      const money = tagMoney(tag, tagShares, options.provider!);
      violations.push(...money.violations);
      counts.billedMicros += money.billed;
      counts.chargedMicros += money.charged;
    }
    for (const org of await loadOrgs(pool)) {
      const opening = options.openingBalances?.[org.id] ?? 0;
      const o = `organization ${org.id}`;
      if (org.balanceMicros < 0) violations.push(`${o}: balance ${org.balanceMicros} micro-USD is negative`);
      if (org.balanceMicros !== opening + org.ledgerSumMicros) violations.push(`${o}: balance ${org.balanceMicros} ≠ opening ${opening} + ledger ${org.ledgerSumMicros} micro-USD`);
      if (org.heldMicros !== org.runsHeldMicros) violations.push(`${o}: holds ${org.heldMicros} but its unfinished runs hold ${org.runsHeldMicros} micro-USD`);
      if (org.finishedHolding > 0) violations.push(`${o}: ${org.finishedHolding} finished run(s) still hold or reserve money`);
      if (org.heldMicros < 0 || org.heldMicros > org.balanceMicros) violations.push(`${o}: holds ${org.heldMicros} of a balance of ${org.balanceMicros} micro-USD`);
      if (org.finishedUnsettled > 0) violations.push(`${o}: ${org.finishedUnsettled} finished run(s) with charges not settled on the organization row`);
    }
    counts.clientResumes = options.clients.reduce((sum, c) => sum + c.resumes, 0);
    counts.clientsGaveUp = options.clients.filter((c) => c.gaveUp !== undefined).length;
    violations.push(...(await clientViolations(options, runsById)));
    return { violations, counts };
  } finally {
    await ownPool?.end();
  }
}
