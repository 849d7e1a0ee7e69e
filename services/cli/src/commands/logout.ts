import { CliError, EXIT } from '../cli-error';
import { configPath, readSavedLogin, removeLogin, withSavedLoginLock } from '../config-file';
import type { ConnectionOptions } from '../connection';
import { interruptSignal } from '../interrupt';
import { print, printJson } from '../output';
import { failureText, revokeSessionToken } from '../revoke';

/**
 * `svc logout`: revokes the saved login on the service it came from (`GET /v1/me` names its
 * session token, `DELETE /v1/tokens/:id` revokes it with its refresh token and every session
 * token renewed from it), then removes it from the config file. A login the
 * service already refuses (revoked, expired) is removed all the same; one that could not be
 * revoked (the service unreachable) is removed too, with a warning and exit code 5, since it
 * stays valid until it expires or is revoked in the web editor.
 */
export async function logout(options: ConnectionOptions): Promise<void> {
  const file = configPath();
  const saved = readSavedLogin(file);
  if (!saved) {
    removeLogin(file);
    if (options.json) printJson({ revoked: false, removed: false });
    else print('Not signed in: there is no saved login.');
    return;
  }
  const { revoked, failure } = await revokeSessionToken(saved, interruptSignal());
  await withSavedLoginLock(file, async () => removeLogin(file));
  if (failure !== undefined) {
    throw new CliError(`removed the saved login, but could not revoke the token on ${saved.url} (${failureText(failure)}); it stays valid until it expires, or revoke it in the web editor (Settings, API tokens)`, 'revoke_failed', EXIT.connection);
  }
  if (options.json) printJson({ url: saved.url, revoked, removed: true });
  else print(revoked ? `Signed out of ${saved.url}: the session token is revoked and removed.` : `Signed out of ${saved.url}: the token had already been revoked or had expired; removed it.`);
}
