import { randomUUID } from 'node:crypto';
import { eventually } from '../../support/eventually';
import { chainRun, reportRuns, startBatch, untilInFlight } from './fault-load';
import { figure, timingGoal } from './figures';
import { followRun } from './run-client';
import type { Topology } from './topology';

/**
 * R3: one Redis fault while `count` runs are in flight (a chain of three provider steps each,
 * 300 ms apiece at the fake, so most runs are mid-step or queued when Redis goes).
 *
 * "Workers consuming after Redis returns" is measured as: from the moment Redis answers again
 * (the fault's `inject` resolved) to the start of the provider call of a new run created right
 * then through the load balancer. That call can only start once an API has accepted the run
 * (Postgres and Redis), the step's job was enqueued in Redis, and a worker took it from the
 * queue, so it proves the whole path consumes again; it includes the backlog ahead of it.
 * The first provider call of any run after Redis returns is reported beside it, without a goal
 * (a step whose job a worker held through the outage may make it without the queue).
 */
export interface RedisFault {
  label: string;
  /** Breaks Redis and brings it back; resolves once it answers again. */
  inject(topo: Topology): Promise<void>;
}

export async function runUnderRedisFault(topo: Topology, fault: RedisFault, count: number): Promise<void> {
  const { label } = fault;
  // Tags end at whitespace (the checker and the fake read `tag:<word>`).
  const slug = label.replace(/[^a-z0-9]+/gi, '-');
  topo.provider.behave({ delayMs: 300 });
  const batch = startBatch(topo, `r3-${slug}`, count, { steps: 3, deadlineMs: 150_000 });
  await untilInFlight(topo, batch, Math.ceil(count / 2));
  const faultAt = Date.now();
  await fault.inject(topo);
  const backAt = Date.now();
  const probeTag = `r3-${slug}-probe`;
  // The probe's answer may be slow on a loaded machine (its time is the figure below, judged in
  // make test-faults only): it waits as long as the figure is watched, and with an idempotency
  // key a POST cut before run.started is sent again (attaching to the run it started), as a
  // careful client would, instead of giving up.
  const probe = followRun(topo.url, topo.account.token, chainRun(probeTag, 1), {
    deadlineMs: 90_000,
    heartbeatMs: Number(topo.env.SSE_HEARTBEAT_MS),
    headTimeoutMs: 60_000,
    idempotencyKey: `${probeTag}-${randomUUID()}`,
  });
  let consumingMs = Number.NaN;
  try {
    await eventually(() => topo.provider.callsFor(probeTag).length > 0, { timeoutMs: 60_000, intervalMs: 20, what: 'the probe run to reach the provider' });
    consumingMs = topo.provider.callsFor(probeTag)[0]!.startedAt - backAt;
  } catch {
    // Not reached: recorded as the time waited, so the goal is missed.
    consumingMs = Date.now() - backAt;
  }
  const firstAfter = Math.min(...topo.provider.calls.filter((c) => c.startedAt >= backAt).map((c) => c.startedAt));
  const records = await batch.done;
  const probeRecord = await probe;
  figure('R3', `${label}: Redis away (fault to answering again)`, backAt - faultAt, undefined, 'ms');
  figure('R3', `${label}: first provider call of any run after Redis returns`, Number.isFinite(firstAfter) ? firstAfter - backAt : 'none', undefined, 'ms');
  const consuming = consumingMs;
  const consumingMet = figure('R3', `${label}: workers consuming after Redis returns (a new run's first step starting)`, consuming, timingGoal({ max: 10_000 }), 'ms');
  const { lastFinishedAt, misses } = await reportRuns(topo, 'R3', label, records, [probeRecord]);
  figure('R3', `${label}: time from the fault to all runs terminal`, lastFinishedAt > 0 ? lastFinishedAt - faultAt : 'none', undefined, 'ms');
  if (!consumingMet) misses.unshift(`workers consuming after Redis returns = ${consuming} ms (goal ≤ 10000 ms)`);
  if (misses.length > 0) throw new Error(`R3 ${label}: ${misses.join('; ')}`);
}
