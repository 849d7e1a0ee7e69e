import type { RunError } from '../contract/schemas/run';

/**
 * Inputs and outcomes of the step transitions of `StepRepository` (reserve, complete, fail).
 * Money is integer micro-USD.
 */

/**
 * A step in flight: one attempt of a step (its run and node), named by the token that owns the
 * step until the attempt settles. Postgres holds the token (`steps.attempt_token`); every
 * transition of a running step names its attempt this way, so a stale attempt changes nothing.
 */
export interface StepAttempt {
  runId: string;
  nodeId: string;
  attemptToken: string;
}

/** What `StepRepository.reserve` needs: the node's worst-case cost before it runs. */
export interface ReserveInput {
  runId: string;
  nodeId: string;
  estimateMicros: number;
  /**
   * A step still `running` under an earlier attempt is taken over only when that attempt started
   * at least this long ago. Default 0: BullMQ redelivers a job only after its lock expired, so an
   * attempt that is still running when its job comes back belongs to a worker presumed dead.
   * With 0 no clock is compared at all: a wall clock that steps back between two transactions
   * must not make a redelivered step look younger than its dead attempt.
   */
  staleAfterMs?: number;
  /**
   * What this attempt is charged if it is lost (its worker dies) or stopped while its cost is
   * unknown: its estimate for a node that calls out of the process, 0 for local nodes. Default 0.
   */
  lostChargeMicros?: number;
  /** Attempts a step may have in all, in-step retries and redeliveries together (default 5, as `STEP_MAX_ATTEMPTS`). */
  maxAttempts?: number;
  /**
   * Held beside the estimate when it fits too (else nothing beside it): the worst case of ready
   * siblings the caller will run after this step, inside this reservation, and commit as its
   * `followers` marked `skippable` (see `ReserveResult.groupMicros`).
   */
  groupMicros?: number;
}

/** Why an attempt could not start: the room of the cap or of the run's hold on the balance, or the attempts, ran out. */
export type AttemptRefusal = 'cap_exceeded' | 'insufficient_credit' | 'attempts_exhausted';

/** Why a reservation was refused. */
export type ReserveRefusal = AttemptRefusal | 'run_not_running' | 'step_not_runnable';

/**
 * The outcome of `StepRepository.reserve`: the new attempt and its owner token, or why not. A
 * refused takeover of a lost attempt still makes the caller the step's owner (`attemptToken`),
 * holding nothing: the caller fails the step under it, which charges the lost attempt.
 */
export type ReserveResult =
  | {
      ok: true;
      attempt: number;
      attemptToken: string;
      /** Whether `groupMicros` was held too (else only the estimate fitted). */
      groupHeld: boolean;
      /** The provider job a lost attempt submitted, which this attempt resumes instead of submitting again (its lost charge not taken). */
      providerJob?: unknown;
    }
  | { ok: false; reason: AttemptRefusal; attemptToken: string }
  | { ok: false; reason: ReserveRefusal; attemptToken?: undefined };

/** A finished attempt's result. */
export interface CompleteStepInput extends StepAttempt {
  /** What the attempt really cost; above the reservation it is clamped to it. */
  costMicros: number;
  output: Record<string, unknown>;
  ms: number;
  /** The step's executable dependents (from the plan), whose pending counts drop by one. */
  dependents: readonly string[];
  /**
   * The run's outputs, when the caller can compute them from this step's output alone: if this
   * is the run's last unfinished step, the run is completed with them in the same transaction.
   */
  runOutputs?: Record<string, unknown>;
  /**
   * The run's organization. With `runOutputs`, the commit may settle the run on the organization's
   * row: it then goes with the organization's other settling commits waiting in this process, in
   * one transaction that writes the row once (StepRepository's constructor).
   */
  orgId?: string;
  /**
   * A dependent the caller will run next, with its worst-case estimate: if this commit makes it
   * ready, its attempt is reserved in the same transaction (as `reserve` would) and `next` in the
   * result says how that went. With `lease`, when nothing else of the run is running or ready,
   * the rest of the cap's room is held with it (`next.leaseMicros`): the caller may run further
   * steps inside that reservation and commit them as `followers` of this one.
   */
  next?: { nodeId: string; estimateMicros: number; lease?: boolean };
  /**
   * Steps the caller ran after this one inside its reservation (its lease), in order, each ready
   * once its predecessors before it are committed: committed in the same transaction under this
   * attempt's token, each charged min(cost, estimate). Their costs and this step's together must
   * fit in this step's reservation.
   */
  followers?: readonly FollowerStep[];
}

/** A step run inside another step's lease, committed with it (see `CompleteStepInput.followers`). */
export interface FollowerStep {
  nodeId: string;
  costMicros: number;
  /** What the caller counted against the lease for it: its charge is at most this. */
  estimateMicros: number;
  output: Record<string, unknown>;
  ms: number;
  dependents: readonly string[];
  /**
   * A sibling that was ready before the head's attempt started and had no job of its own (a
   * group's member): if another attempt took it meanwhile (the reaper enqueued it), it is skipped
   * (its charge is null) instead of failing the whole commit.
   */
  skippable?: boolean;
}

/** The outcome of `StepRepository.completeStep`. */
export interface CompleteStepResult {
  /** True when the step is completed by this attempt (now, or by an earlier call with the same token). */
  committed: boolean;
  /** True when an earlier call with the same token had already committed: nothing changed this time. */
  duplicate: boolean;
  /** Dependents that are ready now (all their predecessors completed, not started yet): enqueue them. */
  ready: string[];
  /** What was charged: the attempt's cost, at most its reservation. */
  chargedMicros: number;
  /** True when the reported cost exceeded the reservation and was cut down to it. */
  clamped: boolean;
  /** Steps of the run not completed after this commit: 0 means the run's last step just finished (-1 when not committed). */
  remaining: number;
  /** True when this commit also completed the run with `runOutputs`. */
  runCompleted: boolean;
  /**
   * The reservation of `input.next`: the new attempt (it is no longer in `ready`: the caller runs
   * it), `cap_exceeded` (nothing held; it is still in `ready`), or undefined when it did not
   * become ready or none was asked for.
   */
  next?: { ok: true; attempt: number; attemptToken: string; leaseMicros: number } | { ok: false; reason: 'cap_exceeded' | 'insufficient_credit' };
  /**
   * What each follower committed was charged, in order (null: a skippable follower another
   * attempt had taken); shorter than `followers` when the run stopped meanwhile (the rest were dropped).
   */
  followerCharges: (number | null)[];
}

/** A failed attempt. */
export interface FailStepInput extends StepAttempt {
  /** What the failed attempt really cost (providers bill failed calls); clamped to the reservation. */
  costMicros: number;
  error: RunError;
  ms?: number | null;
}

/** The outcome of `StepRepository.failStep`. */
export interface FailStepResult {
  /** False when this attempt no longer owns the step (stale worker, or already settled). */
  committed: boolean;
  chargedMicros: number;
  clamped: boolean;
  /** True when this failure moved the run to `failed` (false when it had already finished). */
  runFailed: boolean;
  /** Steps skipped because of the failure. */
  skipped: string[];
}

/** Another attempt of a step after a transient failure. */
export interface RetryAttemptInput extends StepAttempt {
  /** What the failed attempt really cost; clamped to its reservation. */
  costMicros: number;
  /** The next attempt's worst case, held against the cap. */
  estimateMicros: number;
  /** The next attempt's lost charge (see `ReserveInput.lostChargeMicros`). */
  lostChargeMicros?: number;
  /** Attempts a step may have in all (default 5). */
  maxAttempts?: number;
}

export type RetryAttemptResult = { ok: true; attempt: number } | { ok: false; reason: AttemptRefusal | 'run_not_running' | 'not_owner' };
