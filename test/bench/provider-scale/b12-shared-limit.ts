import type { Workload } from '../support/context';
import { ANSWER, awaitRuns, CHAT_RUN, postRuns, startProviderService, USAGE } from '../support/provider-service';
import { atMost, type Row } from '../support/report';
import { maxInSlidingWindow, startSlowProvider } from '../support/slow-provider';

const LATENCY_MS = 2000;
/** The fleet's budget: 3,000 requests a minute, 50 a second. */
const RPM = 3000;
const PER_SECOND = RPM / 60;
/** Where the fake's own limit refuses (429): 10% over the budget, so an overrun shows. */
const FAKE_LIMIT_PER_SECOND = 55;

/**
 * B12: two worker processes share one provider budget (`PROVIDER_LIMITS="openai: rpm=3000"`,
 * 50 calls a second, kept in Redis). The runs are stored while the step queue is held, then
 * released at once, so both workers want every call at the same moment and only the budget paces
 * them. The fake notes each call's arrival and refuses with 429 one that comes when it has already
 * accepted 55 in the second before.
 */
export function b12(steps: number): Workload {
  return {
    id: 'B12',
    title: `shared provider limit: ${steps} steps, two worker processes, PROVIDER_LIMITS="openai: rpm=${RPM}"`,
    async run(ctx) {
      const provider = await startSlowProvider({ latencyMs: LATENCY_MS, text: ANSWER, usage: USAGE, refuse: { kind: 'above-rate', perSecond: FAKE_LIMIT_PER_SECOND, retryAfterS: 1 } });
      const service = await startProviderService(ctx, {
        name: 'b12',
        providerBaseUrl: provider.baseUrl,
        workers: 2,
        steps,
        env: { PROVIDER_LIMITS: `openai: rpm=${RPM}`, PROVIDER_STEP_CONCURRENCY: String(Math.max(2000, steps)) },
      });
      try {
        await service.hold();
        await postRuns(service, CHAT_RUN, steps);
        await service.release();
        const counts = await awaitRuns(service, steps, 600_000);
        if ((counts.completed ?? 0) !== steps) {
          ctx.fail('B12', new Error(`${counts.completed ?? 0} of ${steps} runs completed (${JSON.stringify(counts)})`));
          for (const line of service.errorLines().slice(0, 5)) ctx.say(`logged: ${line}`);
        }
        const arrivals = provider.arrivals;
        const busiest = maxInSlidingWindow(arrivals, 1000);
        const drainS = arrivals.length > 1 ? (Math.max(...arrivals) - Math.min(...arrivals)) / 1000 : NaN;
        const expectedS = steps / PER_SECOND;
        const drainRatio = drainS / expectedS;
        ctx.say(`the fake: ${arrivals.length} calls, ${provider.answered} answered, ${provider.refusals.length} refused (429); at most ${busiest} in any sliding second; first to last call ${drainS.toFixed(1)} s (${steps} ÷ ${PER_SECOND}/s = ${expectedS.toFixed(1)} s)`);
        const rows: Row[] = [
          { id: 'B12', figure: 'calls in the busiest second (sliding 1 s window)', ours: busiest, unit: 'calls', kind: 'rate', goal: atMost(`≤ ${PER_SECOND * 1.05}`, busiest, PER_SECOND * 1.05) },
          { id: 'B12', figure: `429s the fake answered (above ${FAKE_LIMIT_PER_SECOND}/s)`, ours: provider.refusals.length, unit: '429s', kind: 'time', goal: atMost('0', provider.refusals.length, 0) },
          { id: 'B12', figure: `drain, first to last call, ÷ ${expectedS.toFixed(0)} s`, ours: drainRatio, unit: '×', kind: 'time', goal: { text: 'within 10%', met: Math.abs(drainRatio - 1) <= 0.1 } },
        ];
        return rows;
      } finally {
        await service.close();
        await provider.close();
      }
    },
  };
}
