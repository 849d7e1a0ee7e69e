import { Client, DEFAULT_BASE_URL, type RetryNotice } from '../../sdk/src/index';
import { authError } from './cli-error';
import { configPath, normalizeUrl, readSavedLogin, type SavedLogin } from './config-file';
import { cliEnv, type CliEnv } from './cli-config';
import { SavedSession } from './saved-session';

export { normalizeUrl } from './config-file';

/** Options every command that talks to the service takes. */
export interface ConnectionOptions {
  url?: string;
  json?: boolean;
}

/** Where the base URL and the token came from, for messages. */
export interface Connection {
  client: Client;
  url: string;
  token: string | undefined;
  tokenSource: 'SERVICE_TOKEN' | 'saved login' | undefined;
  saved: SavedLogin | undefined;
}

/**
 * The base URL: `--url`, else env `SERVICE_URL`, else the saved login's, else the SDK's default.
 * The token: env `SERVICE_TOKEN`, else the saved one, but only when it was issued by that same
 * base URL, so pointing `--url` elsewhere never sends a saved session token to another server.
 * The saved one is renewed with its refresh token as it expires (see {@link SavedSession}).
 */
export function connect(options: ConnectionOptions, env: CliEnv = cliEnv()): Connection {
  const file = configPath(env);
  const saved = readSavedLogin(file);
  const url = normalizeUrl(options.url || env.SERVICE_URL || saved?.url || DEFAULT_BASE_URL);
  let token: string | undefined;
  let tokenSource: Connection['tokenSource'];
  let session: SavedSession | undefined;
  if (env.SERVICE_TOKEN) {
    token = env.SERVICE_TOKEN.trim();
    tokenSource = 'SERVICE_TOKEN';
  } else if (saved && normalizeUrl(saved.url) === url) {
    token = saved.token;
    tokenSource = 'saved login';
    session = new SavedSession(saved, { file });
  }
  const client = new Client({ baseUrl: url, apiKey: token, headers: { 'user-agent': 'svc-cli' }, resume: { onRetry: sayRetry }, ...(session ? { fetch: session.fetch } : {}) });
  return { client, url, token, tokenSource, saved };
}

/** A line on stderr for each retry of a run's start or stream, so a wait is never silent (stdout stays the command's). */
function sayRetry(retry: RetryNotice): void {
  const seconds = (retry.delayMs / 1000).toFixed(1);
  const what = retry.runId === undefined ? 'starting the run again' : `resuming the stream of run ${retry.runId}`;
  process.stderr.write(`svc: ${retry.reason}; ${what} in ${seconds} s (try ${retry.attempt})\n`);
}

/** The connection of a command that needs a credential: a clear error before any request when there is none. */
export function connectSignedIn(options: ConnectionOptions, env: CliEnv = cliEnv()): Connection {
  const connection = connect(options, env);
  if (connection.token === undefined) {
    const elsewhere = connection.saved ? ` (the saved login is for ${connection.saved.url})` : '';
    throw authError(`not signed in to ${connection.url}${elsewhere}: run \`svc login\` or set SERVICE_TOKEN`);
  }
  return connection;
}
