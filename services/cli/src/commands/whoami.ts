import { connectSignedIn, type ConnectionOptions } from '../connection';
import { interruptSignal } from '../interrupt';
import { print, printJson, table } from '../output';

/** `svc whoami`: `GET /v1/me`, the user, organization and token the CLI acts with. */
export async function whoami(options: ConnectionOptions): Promise<void> {
  const connection = connectSignedIn(options);
  const me = await connection.client.routes['me.get']({}, { signal: interruptSignal() });
  if (options.json) {
    printJson(me);
    return;
  }
  const token = me.token;
  const rows = [
    ['user', `${me.user.name} <${me.user.email}>`],
    ['organization', `${me.organization.name} (${me.organization.slug})`],
    ['token', `${token.kind} "${token.name}" ${token.displayPrefix}… (from ${connection.tokenSource ?? 'nowhere'})`],
    ['scopes', token.scopes.join(' ')],
    ['expires', token.expiresAt ?? 'never'],
    ['service', connection.url],
  ];
  print(table(['', ''], rows).split('\n').slice(1).join('\n'));
}
