import type { ProviderScope, RequestPermit, ScopedRequest } from '../../nodes';
import { readRateHeaders } from '../../nodes';
import type { Logger } from '../../platform/logger';
import type { LimitGrant, ProviderLimiterPort } from '../ports';

/** How long a request waits for its turn before its step says so in the run's events. */
const SAY_WAITING_AFTER_MS = 1_000;
/** The fleet's pause after a 429 that did not say how long to wait. */
const PAUSE_WITHOUT_RETRY_AFTER_MS = 1_000;

/** What the provider waits of a worker process are built with. */
export interface ProviderWaitsDeps {
  /** The shared provider limits; absent: requests go out at once (no limits, no pauses). */
  limiter?: ProviderLimiterPort;
  log: Logger;
  observer?: { slowedDown(provider: string, reason: 'retry_after' | 'remaining'): void };
}

const NO_PERMIT: RequestPermit = { done: () => undefined };

/**
 * The provider scopes of one worker process: each node call of a step runs under its own
 * (`StepProviderScope`), over the process' shared limiter.
 */
export class ProviderWaits {
  /** Node calls of this process waiting on a provider job they submitted or resumed (a fal request, a Replicate prediction). */
  parkedJobs = 0;
  /** Rate headers not obeyed, by provider and header name: each is logged once per process. */
  private readonly warned = new Set<string>();
  /** Answers of each provider that were neither refused (429) nor failed (5xx), counted per second: this second's and the last one's. */
  private readonly answered = new Map<string, { second: number; now: number; last: number }>();

  constructor(private readonly deps: ProviderWaitsDeps) {}

  /**
   * What an answer teaches the fleet about its provider: a 429 pauses every worker for what
   * its `Retry-After` asks (a second without one); a remaining-requests or remaining-tokens
   * header at 0 pauses them until its reset. Headers that make no sense are logged, not obeyed.
   */
  learn(provider: string, status: number, headers: Headers): void {
    const { limiter, log, observer } = this.deps;
    if (!limiter) return;
    const now = Date.now();
    // The pace a 429 teaches is what the provider took: its 5xx (an overload) are not counted as taken.
    if (status !== 429 && status < 500) this.countAnswered(provider, now);
    const advice = readRateHeaders(headers, now);
    for (const ignored of advice.ignored) {
      const name = `${provider} ${ignored.split(':')[0]}`;
      if (this.warned.has(name)) continue;
      this.warned.add(name);
      log.warn({ provider, header: ignored }, 'a provider answered a rate header that makes no sense; it is ignored (logged once per process)');
    }
    let until: number | undefined;
    let reason: 'retry_after' | 'remaining' = 'remaining';
    if (status === 429) {
      reason = 'retry_after';
      until = now + (advice.retryAfterMs ?? PAUSE_WITHOUT_RETRY_AFTER_MS);
    } else {
      const spent = [advice.requests, advice.tokens].filter((b) => b !== undefined && b.remaining === 0 && b.resetMs > 0);
      if (spent.length > 0) until = now + Math.max(...spent.map((b) => b!.resetMs));
    }
    if (until === undefined) return;
    observer?.slowedDown(provider, reason);
    // A 429 teaches the fleet the provider's pace, starting from what this process saw it take.
    const learn = status === 429 ? { answeredPerMinute: this.answeredPerMinute(provider, now) } : undefined;
    limiter.pause(provider, until, learn).catch((err: unknown) => log.warn({ err, provider }, 'could not pause the fleet for a provider'));
  }

  private countAnswered(provider: string, now: number): void {
    const second = Math.floor(now / 1000);
    const counts = this.answered.get(provider);
    if (!counts) this.answered.set(provider, { second, now: 1, last: 0 });
    else if (counts.second === second) counts.now++;
    else {
      counts.last = counts.second === second - 1 ? counts.now : 0;
      counts.second = second;
      counts.now = 1;
    }
  }

  /** Answers of `provider` this process saw in about the last second, as a rate per minute. */
  private answeredPerMinute(provider: string, now: number): number {
    const counts = this.answered.get(provider);
    const second = Math.floor(now / 1000);
    if (!counts || counts.second < second - 1) return 0;
    if (counts.second === second - 1) return counts.now * 60;
    // The last full second, plus this one's share so far.
    return Math.round((counts.last * (1 - (now % 1000) / 1000) + counts.now) * 60);
  }

  /**
   * The scope of one node call of organization `org`. `lendSlot`: gives the job's worker slot
   * back while the call waits on a provider (null when the worker lends no more); `say`: a
   * progress message of the step.
   */
  scopeFor(org: string, lendSlot: (() => (() => void) | null) | undefined, say: (message: string) => void): StepProviderScope {
    return new StepProviderScope(org, this.deps, this, lendSlot, say);
  }
}

/**
 * One node call's provider requests: the first one lends the job's worker slot back (a call
 * waiting on a provider costs a promise and a socket, not a slot); each waits for its turn under
 * the provider's limits (and its model's, where stated); a concurrent-call slot is taken once per
 * provider per call, held until the call ends; answers that ask to slow down pause the fleet.
 * `end` gives back whatever the call still holds, however it ended.
 */
export class StepProviderScope implements ProviderScope {
  /** The job's lent slot's return; undefined until the first request, null when none was lent. */
  private slotBack: (() => void) | null | undefined;
  /** Grants holding a concurrent-call slot, by limit key, with the tokens their request reported. */
  private readonly leases = new Map<string, { grant: LimitGrant; used?: number }>();
  /** Grants of requests not reported done yet. */
  private readonly open = new Set<LimitGrant>();
  /** Whether this call counts among its process' parked jobs. */
  private parkedHere = false;

  constructor(
    private readonly org: string,
    private readonly deps: ProviderWaitsDeps,
    private readonly waits: Pick<ProviderWaits, 'learn' | 'parkedJobs'>,
    private readonly lendSlot: (() => (() => void) | null) | undefined,
    private readonly say: (message: string) => void,
  ) {}

  async beforeRequest(request: ScopedRequest): Promise<RequestPermit> {
    if (this.slotBack === undefined) this.slotBack = this.lendSlot?.() ?? null;
    const { limiter } = this.deps;
    if (!limiter) return NO_PERMIT;
    const modelKey = request.model === undefined ? undefined : `${request.provider}/${request.model}`;
    // The provider's own key always (a pause applies to it, limits or not), its model's where limited.
    const keys = modelKey !== undefined && limiter.has(modelKey) ? [request.provider, modelKey] : [request.provider];
    const taken: { key: string; grant: LimitGrant; lease: boolean }[] = [];
    try {
      // In one order everywhere (provider, then model): no two calls hold each other's slots.
      for (const key of keys) {
        const lease = !this.leases.has(key);
        const grant = await this.turnOf(key, request, lease);
        taken.push({ key, grant, lease });
        if (lease) this.leases.set(key, { grant });
        else this.open.add(grant);
      }
    } catch (err) {
      for (const { key, grant, lease } of taken) {
        grant.release(0);
        if (lease) this.leases.delete(key);
        else this.open.delete(grant);
      }
      throw err;
    }
    let done = false;
    return {
      done: (usedTokens) => {
        if (done) return;
        done = true;
        for (const { key, grant, lease } of taken) {
          // A leased grant lives until the call ends: its correction waits with it.
          if (lease) {
            const held = this.leases.get(key);
            if (held?.grant === grant) held.used = usedTokens;
          } else if (this.open.delete(grant)) grant.release(usedTokens);
        }
      },
    };
  }

  /** Waits for the request's turn under `key`; a wait longer than a second is told to the run's stream. */
  private async turnOf(key: string, request: ScopedRequest, lease: boolean): Promise<LimitGrant> {
    const limiter = this.deps.limiter!;
    const timer = setTimeout(() => {
      const why = limiter.snapshot().find((s) => s.key === key)?.blockedBy;
      this.say(`waiting for ${key}'s limit${why ? ` (${BLOCKED[why]})` : ''}`);
    }, SAY_WAITING_AFTER_MS);
    try {
      return await limiter.acquire({ key, org: this.org, tokens: request.tokens, lease, signal: request.signal });
    } finally {
      clearTimeout(timer);
    }
  }

  observeResponse(request: Pick<ScopedRequest, 'provider' | 'model'>, status: number, headers: Headers): void {
    this.waits.learn(request.provider, status, headers);
  }

  /** The call waits on a provider job it submitted or resumed (counted until it ends). */
  parked(): void {
    if (this.parkedHere) return;
    this.parkedHere = true;
    this.waits.parkedJobs++;
  }

  /** The call ended: its slots and unreported tokens go back, and the job its worker slot. Idempotent. */
  end(): void {
    if (this.parkedHere) {
      this.parkedHere = false;
      this.waits.parkedJobs--;
    }
    for (const grant of this.open) grant.release();
    this.open.clear();
    for (const { grant, used } of this.leases.values()) grant.release(used);
    this.leases.clear();
    this.slotBack?.();
    this.slotBack = null;
  }
}

const BLOCKED: Record<string, string> = {
  requests: 'requests per minute',
  tokens: 'tokens per minute',
  calls: 'concurrent calls',
  paused: 'the provider asked us to slow down',
};
