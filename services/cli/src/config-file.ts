import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cliEnv, type CliEnv } from './cli-config';
import { withFileLock } from './file-lock';

/** What `svc login` saves: the session token, the refresh token that renews it, and the service they belong to. */
export interface SavedLogin {
  /** The API base the tokens were issued by; they are only ever sent there. */
  url: string;
  /** The session (access) token, `svcs_…`: short-lived. */
  token: string;
  /** The refresh token, `svcr_…`: renews `token` (and is replaced) before it expires. Absent in a login saved by an older svc. */
  refreshToken?: string;
  /** When `token` expires (ISO 8601), as the service said at issue. */
  expiresAt?: string;
  savedAt: string;
}

/** Trailing slashes do not make another service. */
export const normalizeUrl = (url: string): string => url.trim().replace(/\/+$/, '');

/** `$XDG_CONFIG_HOME/svc/config.json`, else `~/.config/svc/config.json`. */
export function configPath(env: CliEnv = cliEnv()): string {
  const xdg = env.XDG_CONFIG_HOME;
  // XDG says a relative value is invalid and must be ignored.
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), '.config');
  return path.join(base, 'svc', 'config.json');
}

/** The saved login, or undefined when there is none (or the file is unreadable: logging in again mends it). */
export function readSavedLogin(file = configPath()): SavedLogin | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as Partial<SavedLogin>;
    if (typeof parsed.url === 'string' && typeof parsed.token === 'string') {
      return {
        url: parsed.url,
        token: parsed.token,
        ...(typeof parsed.refreshToken === 'string' ? { refreshToken: parsed.refreshToken } : {}),
        ...(typeof parsed.expiresAt === 'string' ? { expiresAt: parsed.expiresAt } : {}),
        savedAt: typeof parsed.savedAt === 'string' ? parsed.savedAt : '',
      };
    }
  } catch {
    process.stderr.write(`svc: ignoring ${file}: it is not valid JSON\n`);
  }
  return undefined;
}

/**
 * Saves the login readable by its owner alone (directory 0700, file 0600), written to a temporary
 * file first and renamed, so a crash never leaves half a token and no other user ever sees it.
 */
export function saveLogin(login: SavedLogin, file = configPath()): void {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, `${JSON.stringify(login, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(temporary, 0o600);
  fs.renameSync(temporary, file);
}

/**
 * Runs `work` holding the saved login's lock (`config.json.lock` beside it): `svc` processes
 * renewing, saving or removing the login take turns, so none renews with a refresh token another
 * has just used (which would revoke the login) or writes back a login that was replaced.
 */
export async function withSavedLoginLock<T>(file: string, work: () => Promise<T>): Promise<T> {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  return withFileLock(`${file}.lock`, work);
}

/** Removes the saved login; false when there was none. */
export function removeLogin(file = configPath()): boolean {
  try {
    fs.unlinkSync(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
