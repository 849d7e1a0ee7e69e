import { AuthenticationError, Client, NotFoundError } from '../../sdk/src/index';

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
 * Revokes a session token on the service that issued it, with the token itself: `GET /v1/me`
 * names its id, `DELETE /v1/tokens/:id` revokes it. Never throws: `svc logout` and `svc login`
 * (replacing a saved token) each decide what a failure means for them.
 */
export async function revokeSessionToken(url: string, token: string, signal?: AbortSignal): Promise<Revocation> {
  const client = new Client({ baseUrl: url, apiKey: token, headers: { 'user-agent': 'svc-cli' } });
  try {
    const me = await client.routes['me.get']({}, { signal });
    await client.routes['tokens.revoke']({ id: me.token.id }, { signal });
    return { revoked: true };
  } catch (err) {
    if (err instanceof AuthenticationError || err instanceof NotFoundError) return { revoked: false };
    return { revoked: false, failure: err };
  }
}

/** A revocation's failure as a person reads it. */
export const failureText = (failure: unknown): string => (failure instanceof Error ? failure.message : String(failure));
