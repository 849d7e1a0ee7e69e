import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stopServers } from './local-servers';
import type { Stack } from './stack';

/**
 * A test run killed before its global teardown (Ctrl-C, a CI timeout) leaves its servers running
 * and its directory behind. Each run records who owns its stack; the next run stops and removes
 * the stacks whose owner is gone, and leaves those of runs still going alone.
 */

/** The jest process that owns a stack (pid 0: none); its start time tells a reused pid from the original. */
export interface StackOwner {
  pid: number;
  startTime: string | null;
}

/** What a run's stack file holds: the stack, and who owns it. */
export interface StackRecord extends Stack {
  owner: StackOwner;
}

/** Every run's temporary directory starts with this, under os.tmpdir(). */
export const STACK_DIR_PREFIX = 'svc-test-stack-';
/** The stack file inside a run's temporary directory. */
export const STACK_FILE_NAME = 'stack.json';
// A directory without a stack file belongs to a run between mkdtemp and its first write, or to
// one killed right there (no server started yet); only the latter gets this old.
const ORPHAN_AGE_MS = 10 * 60_000;

/** The process start time (clock ticks since boot) from /proc; null where there is no /proc. */
function startTimeOf(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may contain spaces.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** This process as a stack owner. */
export function currentOwner(): StackOwner {
  return { pid: process.pid, startTime: startTimeOf(process.pid) };
}

function isAlive(owner: StackOwner): boolean {
  // pid 0: a run whose set-up failed left the directory for its logs, owned by no one.
  if (owner.pid <= 0) return false;
  try {
    process.kill(owner.pid, 0);
  } catch (err) {
    // EPERM: the pid exists under another user. We cannot tell whether it is a test run, and
    // keeping a stack too long is the safe mistake.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  return owner.startTime === null || startTimeOf(owner.pid) === owner.startTime;
}

/** Stops the servers of runs that died without their teardown and removes their directories. */
export async function cleanStaleStacks(): Promise<void> {
  const root = os.tmpdir();
  const dirs = fs.readdirSync(root).filter((name) => name.startsWith(STACK_DIR_PREFIX)).map((name) => path.join(root, name));
  await Promise.all(
    dirs.map(async (dir) => {
      let record: StackRecord;
      try {
        record = JSON.parse(fs.readFileSync(path.join(dir, STACK_FILE_NAME), 'utf8')) as StackRecord;
      } catch {
        const age = Date.now() - fs.statSync(dir).mtimeMs;
        if (age > ORPHAN_AGE_MS) fs.rmSync(dir, { recursive: true, force: true });
        return;
      }
      if (isAlive(record.owner)) return;
      await stopServers(record);
      fs.rmSync(dir, { recursive: true, force: true });
    }),
  );
}
