import { AuthenticationError, Client, NotFoundError } from '../../sdk/src/index';
import type { SavedLogin } from './config-file';
import { renewalFailure, SavedSession } from './saved-session';

/** What became of a session token the CLI tried to revoke. */
export interface Revocation {
  /** The service revoked it now. */
  revoked: boolean;
  /**
   * Why it could not be revoked (unreachable, 5xx); undefined when it was revoked or the service
   * already refuses it (revoked or expired before: nothing is left to revoke).
   */
  failure?: unknown;
}

/**
 * Revokes a saved login on the service that issued it, with its own tokens: `GET /v1/me` names
 * the session token's id, `DELETE /v1/tokens/:id` revokes it and, with it, the login's refresh
 * token and every session token renewed from it. An expired session token is renewed first (in
 * memory: the login being revoked may no longer be the saved one). Never throws: `svc logout`
 * and `svc login` (replacing a saved login) each decide what a failure means for them.
 */
export async function revokeSessionToken(login: SavedLogin, signal?: AbortSignal): Promise<Revocation> {
  const session = new SavedSession(login);
  const client = new Client({ baseUrl: login.url, apiKey: login.token, headers: { 'user-agent': 'svc-cli' }, fetch: session.fetch });
  try {
    const me = await client.routes['me.get']({}, { signal });
    await client.routes['tokens.revoke']({ id: me.token.id }, { signal });
    return { revoked: true };
  } catch (err) {
    if (err instanceof AuthenticationError || err instanceof NotFoundError) return { revoked: false };
    // The refresh token is refused too (revoked, expired): nothing is left to revoke.
    if (renewalFailure(err)?.code === 'invalid_grant') return { revoked: false };
    return { revoked: false, failure: err };
  }
}

/** A revocation's failure as a person reads it. */
export const failureText = (failure: unknown): string => (failure instanceof Error ? failure.message : String(failure));
