import { ConnectionError, type FetchLike } from '../../sdk/src/index';
import { CliError, EXIT, authError } from './cli-error';
import { normalizeUrl, readSavedLogin, saveLogin, withSavedLoginLock, type SavedLogin } from './config-file';
import { DeviceLogin, type GrantedToken } from './device-login';

/** Renew this long before the saved expiry, so a request under way (or a clock a little off) never carries an expired token. */
const RENEW_BEFORE_MS = 60_000;
/** The longest a refresh may take; the lock's other waiters wait for it. */
const REFRESH_TIMEOUT_MS = 30_000;

/** The login the service granted, as saved: its expiry from `expires_in`, counted from `now`. */
export function loginOf(url: string, granted: GrantedToken, now = Date.now()): SavedLogin {
  return {
    url,
    token: granted.access_token,
    ...(granted.refresh_token ? { refreshToken: granted.refresh_token } : {}),
    ...(typeof granted.expires_in === 'number' ? { expiresAt: new Date(now + granted.expires_in * 1000).toISOString() } : {}),
    savedAt: new Date(now).toISOString(),
  };
}

/**
 * The CliError of a renewal that failed inside {@link SavedSession.fetch} (refused, or the service
 * unreachable), which the SDK hands on as the cause of its ConnectionError; undefined for anything else.
 */
export function renewalFailure(err: unknown): CliError | undefined {
  if (err instanceof CliError) return err;
  return err instanceof ConnectionError && err.cause instanceof CliError ? err.cause : undefined;
}

/** Whether a login's session token is about to expire and can be renewed. */
function expiring(login: SavedLogin, now = Date.now()): boolean {
  if (login.refreshToken === undefined || login.expiresAt === undefined) return false;
  const at = Date.parse(login.expiresAt);
  return Number.isNaN(at) || at - RENEW_BEFORE_MS <= now;
}

function withToken(init: RequestInit, token: string): RequestInit {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${token}`);
  return { ...init, headers };
}

/** A streamed body (an upload) is read once: a request with one cannot be sent again. */
const replayable = (body: RequestInit['body']): boolean => !(typeof ReadableStream !== 'undefined' && body instanceof ReadableStream);

/** The caller's signal, and a deadline of its own. */
function refreshSignal(signal: AbortSignal | undefined): { signal: AbortSignal; done: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new CliError(`the service did not answer the refresh within ${REFRESH_TIMEOUT_MS / 1000} s`, 'timeout', EXIT.connection)), REFRESH_TIMEOUT_MS);
  timer.unref();
  const follow = () => controller.abort(signal?.reason);
  if (signal?.aborted) follow();
  else signal?.addEventListener('abort', follow, { once: true });
  return { signal: controller.signal, done: () => {
    clearTimeout(timer);
    signal?.removeEventListener('abort', follow);
  } };
}

/**
 * A saved login in use. Its `fetch` (the SDK's) sends every request with the login's session
 * token, renewing it with the refresh token first when it is about to expire, and once when the
 * service answers 401 (then the request is sent again); silently: only a renewal that fails is
 * an error (`invalid_grant`, exit 3: run `svc login` again).
 *
 * With a `file`, renewals are saved there under the saved login's lock: a process that finds the
 * login renewed by another `svc` meanwhile takes that one instead of spending a refresh token
 * already used (which the service would take as a leak and answer by revoking the login).
 * Without, they stay in memory (a login about to be revoked, no longer the saved one).
 */
export class SavedSession {
  #login: SavedLogin;
  readonly #file: string | undefined;

  constructor(login: SavedLogin, options: { file?: string } = {}) {
    this.#login = login;
    this.#file = options.file;
  }

  /** The login as it stands now (renewed or not). */
  get login(): SavedLogin {
    return this.#login;
  }

  readonly fetch: FetchLike = async (input, init) => {
    const signal = init.signal ?? undefined;
    if (expiring(this.#login)) await this.renew(this.#login.token, signal);
    const sent = this.#login.token;
    const response = await globalThis.fetch(input, withToken(init, sent));
    if (response.status !== 401 || this.#login.refreshToken === undefined || !replayable(init.body)) return response;
    await response.body?.cancel().catch(() => undefined);
    await this.renew(sent, signal);
    return globalThis.fetch(input, withToken(init, this.#login.token));
  };

  /** Renews the session token, unless the saved login already holds a newer one than `used`. */
  async renew(used: string, signal?: AbortSignal): Promise<void> {
    const file = this.#file;
    if (file === undefined) {
      this.#login = await this.#refreshed(this.#login, signal);
      return;
    }
    await withSavedLoginLock(file, async () => {
      const saved = readSavedLogin(file);
      if (!saved || normalizeUrl(saved.url) !== normalizeUrl(this.#login.url)) {
        throw authError(`not signed in to ${this.#login.url} any more (the saved login was removed or replaced meanwhile): run \`svc login\``, 'not_signed_in');
      }
      // Another svc renewed it (or signed in again) while this one waited: use that.
      if (saved.token !== used && !expiring(saved)) {
        this.#login = saved;
        return;
      }
      if (saved.refreshToken === undefined) return; // a login of an older svc: nothing to renew it with
      let renewed: SavedLogin;
      try {
        renewed = await this.#refreshed(saved, signal);
      } catch (err) {
        // A writer that does not take the lock (an older svc signing in) may have replaced it.
        const now = readSavedLogin(file);
        if (err instanceof CliError && err.code === 'invalid_grant' && now && now.refreshToken !== saved.refreshToken && normalizeUrl(now.url) === normalizeUrl(saved.url)) {
          this.#login = now;
          return;
        }
        throw err;
      }
      saveLogin(renewed, file);
      this.#login = renewed;
    });
  }

  async #refreshed(login: SavedLogin, signal: AbortSignal | undefined): Promise<SavedLogin> {
    if (login.refreshToken === undefined) return login;
    const deadline = refreshSignal(signal);
    try {
      return loginOf(login.url, await new DeviceLogin(login.url).refresh(login.refreshToken, deadline.signal));
    } finally {
      deadline.done();
    }
  }
}
