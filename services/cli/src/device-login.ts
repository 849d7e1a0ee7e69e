import { CliError, EXIT, authError } from './cli-error';

/**
 * The CLI's side of the OAuth 2.0 Device Authorization Grant (RFC 8628) and of the refresh grant
 * that renews its session token, as docs/auth.md describes the service's: form-encoded posts,
 * RFC 6749 error bodies. These endpoints are not part of the contract (they speak OAuth, not the
 * service's JSON), so the SDK has no calls for them.
 */

export const CLIENT_ID = 'svc-cli';
export const SCOPE = 'read run';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** RFC 8628 §3.5: each slow_down adds five seconds to the interval. */
const SLOW_DOWN_STEP_S = 5;
/** Polls that may fail to connect in a row (a network blip, a restarting server) before giving up. */
const MAX_CONNECTION_FAILURES = 5;

export interface DeviceCode {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  interval?: number;
}

export interface GrantedToken {
  access_token: string;
  token_type: string;
  expires_in?: number;
  scope?: string;
  /** Renews the session token (the service answers one with every token since refresh tokens came). */
  refresh_token?: string;
}

interface OAuthAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** Waits; what `poll` calls between polls (tests and Ctrl-C replace or interrupt it). */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

const sleep: Sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });

export class DeviceLogin {
  constructor(private readonly baseUrl: string, private readonly wait: Sleep = sleep) {}

  /** `POST /oauth/device/code`: a user code to show and a device code to poll with. */
  async requestCode(signal?: AbortSignal): Promise<DeviceCode> {
    const answer = await this.#post('/oauth/device/code', { client_id: CLIENT_ID, scope: SCOPE }, signal);
    if (answer.status !== 200) throw oauthFailure(answer, 'requesting a device code');
    const code = answer.body as unknown as DeviceCode;
    if (typeof code.device_code !== 'string' || typeof code.user_code !== 'string' || typeof code.verification_uri !== 'string') {
      throw new CliError(`${this.baseUrl}/oauth/device/code answered something that is not a device code`, 'bad_answer', EXIT.connection);
    }
    return code;
  }

  /**
   * Polls `POST /oauth/token` every `interval` seconds (plus 5 s per `slow_down`) until the person
   * approves (the token), denies, or the code expires (errors with exit code 3).
   */
  async poll(code: DeviceCode, signal?: AbortSignal): Promise<GrantedToken> {
    let intervalS = code.interval && code.interval > 0 ? code.interval : 5;
    const deadline = Date.now() + code.expires_in * 1000;
    let connectionFailures = 0;
    for (;;) {
      await this.wait(intervalS * 1000, signal);
      if (Date.now() > deadline) throw authError('the code expired before it was approved: run `svc login` again', 'expired_token');
      let answer: OAuthAnswer;
      try {
        answer = await this.#post('/oauth/token', { grant_type: DEVICE_GRANT, device_code: code.device_code, client_id: CLIENT_ID }, signal);
        connectionFailures = 0;
      } catch (err) {
        if (signal?.aborted || !(err instanceof CliError) || err.exitCode !== EXIT.connection) throw err;
        connectionFailures += 1;
        if (connectionFailures >= MAX_CONNECTION_FAILURES) throw err;
        intervalS *= 2;
        continue;
      }
      if (answer.status === 200 && typeof answer.body.access_token === 'string') return answer.body as unknown as GrantedToken;
      const error = answer.body.error;
      if (error === 'authorization_pending') continue;
      if (error === 'slow_down') {
        const suggested = typeof answer.body.interval === 'number' ? answer.body.interval : 0;
        intervalS = Math.max(intervalS + SLOW_DOWN_STEP_S, suggested);
        continue;
      }
      if (error === 'access_denied') throw authError('the sign-in was denied in the browser; nothing was saved', 'access_denied');
      if (error === 'expired_token') throw authError('the code expired before it was approved: run `svc login` again', 'expired_token');
      throw oauthFailure(answer, 'waiting for the approval');
    }
  }

  /**
   * `POST /oauth/token` with `grant_type=refresh_token` (RFC 6749 §6): a new session token and a
   * new refresh token; the one sent stops working. A refresh token the service no longer takes
   * (revoked, expired, used before) is a CliError with code `invalid_grant` and exit code 3.
   */
  async refresh(refreshToken: string, signal?: AbortSignal): Promise<GrantedToken & { refresh_token: string }> {
    const answer = await this.#post('/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: CLIENT_ID }, signal);
    const body = answer.body;
    if (answer.status === 200 && typeof body.access_token === 'string' && typeof body.refresh_token === 'string') return body as unknown as GrantedToken & { refresh_token: string };
    if (answer.status === 200) throw new CliError(`${this.baseUrl}/oauth/token answered a refresh without the new tokens`, 'bad_answer', EXIT.connection);
    throw oauthFailure(answer, `renewing the saved login for ${this.baseUrl}`);
  }

  async #post(path: string, params: Record<string, string>, signal?: AbortSignal): Promise<OAuthAnswer> {
    const url = `${this.baseUrl}${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', 'user-agent': 'svc-cli' },
        body: new URLSearchParams(params).toString(),
        signal,
      });
    } catch (err) {
      if (signal?.aborted) throw signal.reason ?? err;
      const cause = (err as { cause?: { message?: string } }).cause?.message;
      throw new CliError(`could not reach the service at ${this.baseUrl}: ${(err as Error).message}${cause ? ` (${cause})` : ''}`, 'connection_failed', EXIT.connection);
    }
    const text = await response.text();
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === 'object') body = parsed as Record<string, unknown>;
    } catch {
      body = { error: 'bad_answer', error_description: `HTTP ${response.status} from ${url}: ${text.slice(0, 200)}` };
    }
    return { status: response.status, body };
  }
}

/** An RFC 6749 error body as a CliError: its description, its code; 5xx and 429 are connection trouble. */
function oauthFailure(answer: OAuthAnswer, doing: string): CliError {
  const code = typeof answer.body.error === 'string' ? answer.body.error : `http_${answer.status}`;
  const description = typeof answer.body.error_description === 'string' ? answer.body.error_description : `HTTP ${answer.status}`;
  const transient = answer.status >= 500 || answer.status === 429 || code === 'temporarily_unavailable';
  const again = code === 'invalid_grant' ? ': run `svc login` again' : '';
  return new CliError(`${doing} failed: ${description}${again}`, code, transient ? EXIT.connection : EXIT.auth);
}
