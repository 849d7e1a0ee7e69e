import fs from 'node:fs';
import { CliError, EXIT } from './cli-error';

/** How long to wait for another `svc` to let go of the lock before giving up. */
const WAIT_MS = 60_000;
const RETRY_MS = 25;
/** A lock this old is left over (its holder's work is bounded well below this): taken over. */
const STALE_MS = 120_000;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether the process that wrote the lock is gone (same machine), or the lock is older than any holder's work. */
function isStale(lockFile: string): boolean {
  let text: string;
  let mtimeMs: number;
  try {
    text = fs.readFileSync(lockFile, 'utf8');
    mtimeMs = fs.statSync(lockFile).mtimeMs;
  } catch {
    return false; // gone already: the next attempt takes it
  }
  if (Date.now() - mtimeMs > STALE_MS) return true;
  const pid = Number(text.trim());
  if (!Number.isInteger(pid) || pid <= 0) return false; // being written: its holder is alive
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Runs `work` while holding `lockFile`, a file created exclusively (`O_EXCL`) holding this
 * process's id, so `svc` processes of one user take turns at what it guards (the saved login).
 * A lock whose process has exited, or older than any holder's work, is taken over.
 */
export async function withFileLock<T>(lockFile: string, work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    try {
      const fd = fs.openSync(lockFile, 'wx', 0o600);
      try {
        fs.writeSync(fd, String(process.pid));
      } finally {
        fs.closeSync(fd);
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (isStale(lockFile)) {
        fs.rmSync(lockFile, { force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new CliError(`another svc process has held ${lockFile} for over ${WAIT_MS / 1000} s; if none is running, remove that file`, 'lock_timeout', EXIT.connection);
      }
      await pause(RETRY_MS);
    }
  }
  try {
    return await work();
  } finally {
    fs.rmSync(lockFile, { force: true });
  }
}
