import type { StepAttempt } from '../ports';
import type { RunContext } from '../run-context-cache';
import type { HeldStart } from './held-start';
import type { PreparedStep } from './prepared-step';
import type { StepBatch } from './step-batch';

/** Outputs of finished steps that a job holds, by node id: read before asking Postgres. */
export type OutputsInHand = ReadonlyMap<string, Record<string, unknown>>;

/**
 * How a step that a job runs gets its attempt (README.md, "A step's life"):
 * - `reserve`: the job's step, or a step the job's previous step made ready: reserved here; with
 *   a `group` (ready siblings of local nodes, with no jobs of their own), their worst cases are
 *   held with it, and they run after it inside that reservation (README.md, "Groups").
 * - `redelivered`: the job came back after its worker went silent: reserved here, taking over the
 *   lost attempt; when another attempt has the step, the dependents that the lost worker may have
 *   been running inline are enqueued again.
 * - `reservedWithRun`: the job's first delivery of a step reserved when its run was stored.
 * - `reservedWithCommit`: reserved by its predecessor's commit, inputs in hand; with a `lease`
 *   (the rest of the cap's room) it heads a batch.
 * - `inBatch`: runs inside a batch's lease, counted against it, with no reservation of its own.
 */
export type StepStart =
  | { how: 'reserve'; nodeId: string; group?: readonly string[] }
  | { how: 'redelivered'; nodeId: string; group?: readonly string[] }
  | { how: 'reservedWithRun'; nodeId: string; attemptToken: string }
  | { how: 'reservedWithCommit'; step: PreparedStep; attemptToken: string; lease: StepBatch | undefined }
  | { how: 'inBatch'; step: PreparedStep; batch: StepBatch };

/** The step a job runs next, with the outputs of the step before it in hand. */
export interface NextStep {
  start: StepStart;
  outputsInHand: OutputsInHand;
}

/** The node a start is for. */
export function nodeIdOf(start: StepStart): string {
  return 'step' in start ? start.step.nodeId : start.nodeId;
}

/**
 * A step with an attempt, as its attempts run it. `attemptToken` is its own, or the batch head's
 * for a step inside a batch (it is committed under that token).
 */
export interface ReservedStep extends PreparedStep, StepAttempt {
  context: RunContext;
  dependents: readonly string[];
  /** The batch it heads, or runs inside when the batch holds finished steps. */
  batch: StepBatch | undefined;
  /** Whether its job may run another step after it (not at the job's last inline step). */
  mayContinue: boolean;
  /** The node of the job running it (its own, or the step the job began with): what the reaper checks for groups it runs inline. */
  job: string;
  /** Its `step.started`, when held to go out with its outcome (a local step: see HeldStart). */
  startHeld?: HeldStart;
  /** The provider job a lost attempt of the step submitted: this attempt resumes it instead of submitting again. */
  resumedJob?: unknown;
}
