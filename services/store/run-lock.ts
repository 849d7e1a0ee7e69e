import type { RunStatus } from '../contract/schemas/run';
import type { Prisma } from './prisma-generated';
import { inTransaction, type Db } from './prisma-client';
import { isUuid, parseRunStatus } from './run-records';
import { microsFromDb } from './micros';

/**
 * The lock protocol of the run store. Every operation that changes more than one row of a run
 * (run row, its steps, the org's ledger) first locks the run row (`SELECT ... FOR UPDATE`) in its
 * transaction, then touches steps, then posts to the ledger (which locks the organization row).
 * One order for everyone means two operations can never wait for each other in a cycle
 * (no deadlocks between a reserve, a completion and a failure of the same run), and since
 * nobody changes a step of a run without holding the run's lock, the statements that follow the
 * lock read the run and its steps as they really are (Read Committed takes a fresh snapshot per
 * statement, after the lock was granted).
 */

/** The run row as seen under its lock. */
export interface LockedRun {
  orgId: string;
  status: RunStatus;
  capMicros: number;
  reservedMicros: number;
  spentMicros: number;
}

interface LockedRow {
  org_id: string;
  status: string;
  cap_micros: bigint;
  reserved_micros: bigint;
  spent_micros: bigint;
}

/**
 * Runs `work` in a transaction (or the caller's) holding the lock of run `runId`; `run` is null when
 * there is no such run (nothing is locked then).
 */
export function withRunLock<T>(db: Db, runId: string, work: (tx: Prisma.TransactionClient, run: LockedRun | null) => Promise<T>): Promise<T> {
  return inTransaction(db, async (tx) => {
    if (!isUuid(runId)) return work(tx, null);
    const rows = await tx.$queryRaw<LockedRow[]>`
      SELECT org_id, status, cap_micros, reserved_micros, spent_micros FROM runs WHERE id = ${runId}::uuid FOR UPDATE`;
    const row = rows[0];
    if (!row) return work(tx, null);
    return work(tx, {
      orgId: row.org_id,
      status: parseRunStatus(row.status, runId),
      capMicros: microsFromDb(row.cap_micros),
      reservedMicros: microsFromDb(row.reserved_micros),
      spentMicros: microsFromDb(row.spent_micros),
    });
  });
}
