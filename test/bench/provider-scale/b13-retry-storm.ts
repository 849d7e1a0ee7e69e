import type { Workload } from '../support/context';
import { ANSWER, awaitRuns, CHAT_RUN, postRuns, PRICE_PER_CALL_MICROS, startProviderService, USAGE, type ProviderService } from '../support/provider-service';
import { atMost, type Row } from '../support/report';
import { countWithin, startSlowProvider } from '../support/slow-provider';

const LATENCY_MS = 2000;
const RETRY_AFTER_S = 1;
/** The fake's capacity: calls beyond this many in the sliding second before are refused. */
const CAPACITY_PER_SECOND = 50;
/** Starting balance of the bench's organization (provider-service.ts). */
const BALANCE_MICROS = 1_000_000_000n;

/** What Postgres says the organization was charged, three ways. */
async function charges(service: ProviderService): Promise<{ chatSteps: bigint; allSteps: bigint; ledger: bigint; balance: bigint }> {
  const { rows } = await service.db.query<{ chat: string; all: string; ledger: string; balance: string }>(
    `SELECT (SELECT COALESCE(sum(s.cost_micros), 0) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.org_id = $1 AND s.node_id = 'chat') AS chat,
            (SELECT COALESCE(sum(s.cost_micros), 0) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.org_id = $1) AS all,
            (SELECT COALESCE(-sum(amount_micros), 0) FROM ledger_entries WHERE org_id = $1 AND kind <> 'credit') AS ledger,
            (SELECT $2::bigint - balance_micros FROM organizations WHERE id = $1) AS balance`,
    [service.account.orgId, String(BALANCE_MICROS)],
  );
  const row = rows[0]!;
  return { chatSteps: BigInt(row.chat), allSteps: BigInt(row.all), ledger: BigInt(row.ledger), balance: BigInt(row.balance) };
}

/**
 * B13: a 429 storm. The fake takes 50 calls a second and refuses the rest with 429 and
 * `Retry-After: 1`; no limit is configured, and the steps are released all at once, so a fleet
 * that only retried would send most of its calls into refusals (every second call and more).
 * Every step must still complete; the calls the fleet makes are counted against the steps (the
 * fleet must learn the provider's pace from its 429s: at most 1.5 calls per step); and no step may
 * be charged for a call the fake did not answer with a completion: the settled step costs, the
 * ledger's charges and the balance's fall each equal the answered calls × the price of one call.
 * Two worker processes, so that what the provider asks has to hold across the fleet.
 */
export function b13(steps: number): Workload {
  return {
    id: 'B13',
    title: `429 storm: ${steps} steps released at once, two worker processes, the fake taking ${CAPACITY_PER_SECOND}/s and refusing the rest (Retry-After: ${RETRY_AFTER_S})`,
    async run(ctx) {
      const provider = await startSlowProvider({ latencyMs: LATENCY_MS, text: ANSWER, usage: USAGE, refuse: { kind: 'above-rate', perSecond: CAPACITY_PER_SECOND, retryAfterS: RETRY_AFTER_S } });
      const service = await startProviderService(ctx, {
        name: 'b13',
        providerBaseUrl: provider.baseUrl,
        workers: 2,
        steps,
        env: { PROVIDER_STEP_CONCURRENCY: String(Math.max(2000, steps)) },
      });
      try {
        await service.hold();
        await postRuns(service, CHAT_RUN, steps);
        const released = Date.now();
        await service.release();
        const counts = await awaitRuns(service, steps, 600_000);
        const drainS = (Date.now() - released) / 1000;
        const completed = counts.completed ?? 0;
        if (completed !== steps) {
          ctx.fail('B13', new Error(`${completed} of ${steps} runs completed (${JSON.stringify(counts)})`));
          for (const line of service.errorLines().slice(0, 3)) ctx.say(`logged: ${line}`);
        }
        const calls = provider.arrivals.length;
        const refused = provider.refusals.length;
        // Calls that came while an earlier 429's Retry-After still ran: what a fleet-wide pause would have held back.
        const insidePause = countWithin(provider.arrivals, provider.refusals, RETRY_AFTER_S * 1000);
        const charged = await charges(service);
        const expected = BigInt(provider.answered) * BigInt(PRICE_PER_CALL_MICROS);
        ctx.say(`${completed} of ${steps} runs completed in ${drainS.toFixed(1)} s; the fake: ${calls} calls (${(calls / steps).toFixed(2)} per step), ${provider.answered} answered, ${refused} refused, ${insidePause} inside a Retry-After an earlier 429 asked for`);
        ctx.say(`charged: chat steps ${charged.chatSteps}, all steps ${charged.allSteps}, ledger ${charged.ledger}, balance fell ${charged.balance} micro-USD; answered × ${PRICE_PER_CALL_MICROS} = ${expected}`);
        for (const [what, value] of [['the chat steps\' settled costs', charged.chatSteps], ['all steps\' settled costs', charged.allSteps], ["the ledger's charges", charged.ledger], ["the balance's fall", charged.balance]] as const) {
          if (value !== expected) ctx.fail('B13 money', new Error(`${what}: ${value} micro-USD, but the fake answered ${provider.answered} calls × ${PRICE_PER_CALL_MICROS} = ${expected}`));
        }
        // `insidePause`: calls sent while an earlier 429's Retry-After still ran (the fewer, the better).
        const perStep = calls / steps;
        const rows: Row[] = [
          { id: 'B13', figure: `runs completed of ${steps}`, ours: completed, unit: 'runs', kind: 'rate', goal: { text: `all ${steps}`, met: completed === steps } },
          { id: 'B13', figure: 'provider calls per step', ours: perStep, unit: '×', kind: 'time', goal: atMost('≤ 1.5×', perStep, 1.5) },
          { id: 'B13', figure: `calls inside an asked pause (${RETRY_AFTER_S} s after a 429)`, ours: insidePause, unit: 'calls', kind: 'time' },
          { id: 'B13', figure: 'charged ÷ answered calls × price', ours: expected === 0n ? NaN : Number(charged.ledger) / Number(expected), unit: '×', kind: 'time', goal: { text: 'exactly 1', met: charged.ledger === expected && charged.chatSteps === expected } },
        ];
        return rows;
      } finally {
        await service.close();
        await provider.close();
      }
    },
  };
}
