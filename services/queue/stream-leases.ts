import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { RedisScript, withTimeout } from './redis-script';

const ACQUIRE = RedisScript.fromFile('stream-lease-acquire');
const RENEW = RedisScript.fromFile('stream-lease-renew');

/** A held slot; `release` gives it back (once; later calls do nothing). */
export interface StreamLease {
  release(): void;
}

export interface StreamLeasesOptions {
  redis: Redis;
  prefix: string;
  /** Lifetime of a lease that is not renewed (its holder died); default 30 s. */
  leaseMs?: number;
  /** How often live leases are renewed; default a third of `leaseMs`. */
  renewMs?: number;
  /** How long taking a lease waits for Redis before it fails open; default 1 s. */
  timeoutMs?: number;
  /**
   * Longest wait before a given-back lease is removed in Redis when no slot of its group is taken
   * meanwhile (the next take sends the removal with it); default 50 ms.
   */
  releaseDelayMs?: number;
  /** Told about failures that were let through (taking, renewing or releasing a lease). */
  onError?: (err: unknown) => void;
}

const NO_LEASE: StreamLease = { release: () => undefined };

/**
 * Counts open streams per group (an organization) across every API replica, with leases in
 * Redis: a sorted set per group whose members are lease ids scored by their expiry. A replica
 * renews the leases it holds every `renewMs`; a lease whose replica died (no release, no
 * renewal) expires after `leaseMs` and is dropped by the next `acquire` of its group, so a crash
 * never leaks slots for longer than that. Times are Redis's clock, never a replica's.
 *
 * A lease given back stays in Redis for up to `releaseDelayMs`, and this replica's next `acquire`
 * of its group within that delay takes it over as it is, without a call to Redis (an
 * organization's next stream usually opens on the replica whose last one ended): the slot passes
 * from one stream to the next, and the count in Redis, which counted it all along, stays right.
 * Only a lease taken less than half its lifetime ago is handed on (its expiry in Redis is then
 * at least half a lifetime away, renewed or not), and only under a limit no lower than the one it
 * was taken under. A lease that cannot be handed on is removed by the group's next `acquire`, in
 * the same script, or after `releaseDelayMs` when none comes. So this replica sees the slot free
 * at once, and the others within that delay.
 *
 * A Redis that cannot be reached fails open (the stream is let through uncounted): the limit
 * protects the service, it must not be what takes it down.
 */
export class StreamLeases {
  private readonly replica = randomUUID();
  private readonly leaseMs: number;
  private readonly timeoutMs: number;
  /** Leases this replica holds: group key → lease ids. */
  private readonly held = new Map<string, Set<string>>();
  /** Leases given back and not yet removed in Redis, in the order given back: group key → leases. */
  private readonly released = new Map<string, Released[]>();
  private readonly releaseDelayMs: number;
  private releaseTimer: NodeJS.Timeout | undefined;
  private readonly timer: NodeJS.Timeout;
  private next = 0;

  constructor(private readonly options: StreamLeasesOptions) {
    this.leaseMs = options.leaseMs ?? 30_000;
    this.timeoutMs = options.timeoutMs ?? 1000;
    this.releaseDelayMs = options.releaseDelayMs ?? 50;
    this.timer = setInterval(() => void this.renew(), options.renewMs ?? Math.floor(this.leaseMs / 3));
    this.timer.unref();
  }

  /** Takes one of `group`'s `slots`; null when all are held. */
  async acquire(group: string, slots: number): Promise<StreamLease | null> {
    const key = this.keyOf(group);
    const handedOn = this.handOn(key, slots);
    if (handedOn) return handedOn;
    const id = `${this.replica}:${++this.next}`;
    const released = (this.released.get(key) ?? []).map((lease) => lease.id);
    this.released.delete(key);
    const sentAt = performance.now();
    let taken: boolean;
    try {
      const reply = ACQUIRE.run(this.options.redis, [key], [id, this.leaseMs, slots, ...released]) as Promise<[number, number]>;
      const [ok] = await withTimeout(reply, this.timeoutMs, 'stream slot');
      taken = Number(ok) === 1;
    } catch (err) {
      // A lease written after the timeout is never renewed: it expires after leaseMs. The
      // removals it carried may not have run: sent again (removing an absent lease is harmless).
      for (const gone of released) this.release(key, { id: gone, takenAt: -Infinity, slots: 0 });
      this.options.onError?.(err);
      return NO_LEASE;
    }
    if (!taken) return null;
    return this.hold(key, { id, takenAt: sentAt, slots });
  }

  /**
   * A lease of `key` given back and not yet removed, taken over for a new stream: the newest one
   * taken less than half a lifetime ago (so that its expiry in Redis is far enough away whatever
   * the renewals did) under a limit no lower than `slots` (so that the group's count, which
   * includes it, is within today's limit). Null when there is none.
   */
  private handOn(key: string, slots: number): StreamLease | null {
    const queued = this.released.get(key);
    if (!queued) return null;
    const fresh = performance.now() - this.leaseMs / 2;
    for (let i = queued.length - 1; i >= 0; i--) {
      const lease = queued[i]!;
      if (lease.takenAt < fresh || slots < lease.slots) continue;
      queued.splice(i, 1);
      if (queued.length === 0) this.released.delete(key);
      return this.hold(key, lease);
    }
    return null;
  }

  private hold(key: string, lease: GivenBack): StreamLease {
    const ids = this.held.get(key) ?? new Set<string>();
    ids.add(lease.id);
    this.held.set(key, ids);
    return new HeldLease(this, key, ids, lease.id, lease.takenAt, lease.slots);
  }

  /**
   * Gives one lease back (HeldLease.release, once): no longer renewed; handed on to the group's
   * next stream here, or removed in Redis soon.
   */
  giveBack(key: string, ids: Set<string>, lease: GivenBack): void {
    ids.delete(lease.id);
    if (ids.size === 0 && this.held.get(key) === ids) this.held.delete(key);
    this.release(key, lease);
  }

  /** Stops renewing and removes every lease this replica holds or gave back. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    clearTimeout(this.releaseTimer);
    const removals = this.takeReleased();
    for (const [key, ids] of this.held) removals.set(key, [...(removals.get(key) ?? []), ...[...ids].map((id) => ({ id }))]);
    this.held.clear();
    await this.remove(removals);
  }

  /** Queues a lease's removal: handed on or sent with the group's next take, or sent by the timer. */
  private release(key: string, lease: GivenBack): void {
    const entry: Released = { id: lease.id, takenAt: lease.takenAt, slots: lease.slots, at: performance.now() };
    const queued = this.released.get(key);
    if (queued) queued.push(entry);
    else this.released.set(key, [entry]);
    this.releaseTimer ??= setTimeout(() => this.removeDue(), this.releaseDelayMs);
  }

  /**
   * The timer: removes in Redis the leases given back `releaseDelayMs` ago or more, and waits for
   * the others (given back since the timer was set: a lease handed on and given back again keeps
   * its delay).
   */
  private removeDue(): void {
    this.releaseTimer = undefined;
    const due = performance.now() - this.releaseDelayMs;
    const removals = new Map<string, Released[]>();
    let next = Infinity;
    for (const [key, queued] of this.released) {
      let n = 0;
      while (n < queued.length && queued[n]!.at <= due) n++;
      if (n > 0) removals.set(key, queued.splice(0, n));
      if (queued.length === 0) this.released.delete(key);
      else next = Math.min(next, queued[0]!.at);
    }
    if (next !== Infinity) this.releaseTimer = setTimeout(() => this.removeDue(), Math.max(1, next - due));
    void this.remove(removals);
  }

  /** The removals queued so far, the queue emptied. */
  private takeReleased(): Map<string, { id: string }[]> {
    const removals = new Map<string, { id: string }[]>(this.released);
    this.released.clear();
    return removals;
  }

  private async remove(removals: Map<string, { id: string }[]>): Promise<void> {
    await Promise.all(
      [...removals].map(([key, leases]) =>
        this.options.redis.zrem(key, ...leases.map((lease) => lease.id)).catch((err: unknown) => this.options.onError?.(err)),
      ),
    );
  }

  private async renew(): Promise<void> {
    await Promise.all(
      [...this.held].map(async ([key, ids]) => {
        // Renewal re-adds a lease that is gone (Redis restarted, or was away longer than leaseMs):
        // the stream is still open. Commands on one connection run in order, so a release sent
        // after this renewal removes the lease, and one sent before it is no longer in `ids`. (A
        // renewal that has to load its script first may re-add a lease released meanwhile; not
        // renewed again, it expires after leaseMs.)
        if (ids.size === 0) return;
        await RENEW.run(this.options.redis, [key], [this.leaseMs, ...ids]).catch((err: unknown) => this.options.onError?.(err));
      }),
    );
  }

  private keyOf(group: string): string {
    return `${this.options.prefix}:stream-leases:${group}`;
  }
}

/**
 * A lease given back, or held: its id, when its take was sent (`performance.now()`: its expiry in
 * Redis is at least a lifetime after), and the group's limit it was taken under.
 */
interface GivenBack {
  id: string;
  takenAt: number;
  slots: number;
}

/** A lease given back, and when (`performance.now()`). */
interface Released extends GivenBack {
  at: number;
}

/**
 * A lease this replica holds: a class with a method rather than an object literal with an arrow,
 * since one lives as long as each open stream and tsx names an arrow bound to a property, which
 * gives that closure a property dictionary of about 256 bytes (docs/performance/streams.md).
 */
class HeldLease implements StreamLease, GivenBack {
  private released = false;

  constructor(
    private readonly leases: StreamLeases,
    private readonly key: string,
    private readonly ids: Set<string>,
    readonly id: string,
    readonly takenAt: number,
    readonly slots: number,
  ) {}

  release(): void {
    if (this.released) return;
    this.released = true;
    this.leases.giveBack(this.key, this.ids, this);
  }
}
