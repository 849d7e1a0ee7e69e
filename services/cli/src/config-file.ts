import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cliEnv, type CliEnv } from './cli-config';

/** What `svc login` saves: the session token and the service it belongs to. */
export interface SavedLogin {
  /** The API base the token was issued by; the token is only ever sent there. */
  url: string;
  token: string;
  savedAt: string;
}

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
      return { url: parsed.url, token: parsed.token, savedAt: typeof parsed.savedAt === 'string' ? parsed.savedAt : '' };
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
