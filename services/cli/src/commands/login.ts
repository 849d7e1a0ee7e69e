import { Client, type RouteOutput } from '../../../sdk/src/index';
import { openBrowser } from '../browser';
import { configPath, saveLogin } from '../config-file';
import { connect, type ConnectionOptions } from '../connection';
import { DeviceLogin } from '../device-login';
import { interruptSignal } from '../interrupt';
import { print, printJson } from '../output';

export interface LoginOptions extends ConnectionOptions {
  /** commander's `--no-browser`. */
  browser?: boolean;
}

/**
 * `svc login`: the device flow. The code and the page go to stderr (they are instructions), the
 * outcome to stdout. The token is saved before anything else is asked of the service, so a
 * failing `GET /v1/me` never costs the person their approval.
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
  saveLogin({ url, token: granted.access_token, savedAt: new Date().toISOString() }, file);

  let me: RouteOutput<'me.get'> | undefined;
  try {
    me = await new Client({ baseUrl: url, apiKey: granted.access_token }).routes['me.get']({}, { signal });
  } catch {
    me = undefined;
  }
  if (process.env.SERVICE_TOKEN) process.stderr.write('note: SERVICE_TOKEN is set in this shell and takes precedence over the saved login\n');
  if (options.json) {
    printJson({ url, configFile: file, scope: granted.scope ?? null, user: me?.user ?? null, organization: me?.organization ?? null, token: me?.token ?? null });
    return;
  }
  const who = me ? ` as ${me.user.name} <${me.user.email}> in ${me.organization.name} (${me.organization.slug})` : '';
  print(`Signed in to ${url}${who}.\nThe session token is saved in ${file}.`);
}
