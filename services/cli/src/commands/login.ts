import { Client, type RouteOutput } from '../../../sdk/src/index';
import { openBrowser } from '../browser';
import { configPath, normalizeUrl, readSavedLogin, saveLogin, withSavedLoginLock, type SavedLogin } from '../config-file';
import { connect, type ConnectionOptions } from '../connection';
import { DeviceLogin } from '../device-login';
import { interruptSignal } from '../interrupt';
import { print, printJson } from '../output';
import { failureText, revokeSessionToken } from '../revoke';
import { loginOf } from '../saved-session';
import { cliEnv } from '../cli-config';

export interface LoginOptions extends ConnectionOptions {
  /** commander's `--no-browser`. */
  browser?: boolean;
}

/**
 * `svc login`: the device flow. The code and the page go to stderr (they are instructions), the
 * outcome to stdout. The tokens (session and refresh) are saved before anything else is asked of
 * the service, so a failing `GET /v1/me` never costs the person their approval. A login saved
 * before for the same service is revoked once the new one is saved (best effort, as `svc logout`
 * does): the file holds one login, so the old one would otherwise stay valid with nothing left to
 * revoke it.
 */
export async function login(options: LoginOptions): Promise<void> {
  const { url } = connect(options);
  const signal = interruptSignal();
  const flow = new DeviceLogin(url);
  const code = await flow.requestCode(signal);
  const page = code.verification_uri_complete ?? code.verification_uri;
  const lines = [
    `To sign in to ${url}, open this page and approve the code:`,
    '',
    `  ${page}`,
    '',
    `  code: ${code.user_code}`,
    '',
  ];
  process.stderr.write(`${lines.join('\n')}\n`);
  if (options.browser !== false && openBrowser(page)) process.stderr.write('(opened in your browser)\n');
  process.stderr.write(`Waiting for the approval (the code expires in ${Math.round(code.expires_in / 60)} min; Ctrl-C to stop)…\n`);

  const granted = await flow.poll(code, signal);
  const file = configPath();
  // Under the lock: the login it replaces is read as it stands (another svc may have renewed it).
  const previous = await withSavedLoginLock(file, async (): Promise<SavedLogin | undefined> => {
    const saved = readSavedLogin(file);
    saveLogin(loginOf(url, granted), file);
    return saved && normalizeUrl(saved.url) === url ? saved : undefined;
  });

  // The new login is saved first: a failing revocation never costs it.
  let replaced: string | undefined;
  let previousTokenRevoked: boolean | null = null;
  if (previous && previous.token !== granted.access_token) {
    const { revoked, failure } = await revokeSessionToken(previous, signal);
    previousTokenRevoked = revoked;
    if (failure !== undefined) {
      process.stderr.write(`warning: could not revoke the previous session token on ${previous.url} (${failureText(failure)}); it stays valid until it expires, or revoke it in the web editor (Settings, API tokens)\n`);
    } else {
      replaced = revoked ? 'The previous session token is revoked.' : 'The previous session token had already been revoked or had expired.';
    }
  }

  let me: RouteOutput<'me.get'> | undefined;
  try {
    me = await new Client({ baseUrl: url, apiKey: granted.access_token }).routes['me.get']({}, { signal });
  } catch {
    me = undefined;
  }
  if (cliEnv().SERVICE_TOKEN) process.stderr.write('note: SERVICE_TOKEN is set in this shell and takes precedence over the saved login\n');
  if (options.json) {
    printJson({ url, configFile: file, scope: granted.scope ?? null, user: me?.user ?? null, organization: me?.organization ?? null, token: me?.token ?? null, previousTokenRevoked });
    return;
  }
  const who = me ? ` as ${me.user.name} <${me.user.email}> in ${me.organization.name} (${me.organization.slug})` : '';
  print(`Signed in to ${url}${who}.\nThe session token is saved in ${file}.${replaced ? `\n${replaced}` : ''}`);
}
