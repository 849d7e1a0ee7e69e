import { Router, type Request, type Response } from 'express';
import type { Scope } from '../../contract';
import { issueRefreshToken, issueToken, parseRefreshToken } from '../../platform/access-token';
import { hashDeviceCode, issueDeviceCodes } from '../../platform/device-code';
import type { DeviceRouteDeps, FailureLimit } from '../handlers/device-ports';
import { allowOnly, routeLabel } from './route-marks';
import { invalidRequest, noStore, OAuthError, oauthBody, oauthErrors, oauthParams, required } from './oauth-params';

/** The `grant_type` of RFC 8628 §3.4. */
export const DEVICE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';
/** The `grant_type` of RFC 6749 §6: a device login renews its session token with its refresh token. */
const REFRESH_GRANT_TYPE = 'refresh_token';
const DAY_MS = 86_400_000;

const KNOWN_SCOPES: readonly Scope[] = ['read', 'run'];
const DEFAULT_SCOPES: readonly Scope[] = ['read', 'run'];
const MAX_CLIENT_ID_LENGTH = 64;
/** A poll up to this much early still counts as on time (timers and networks are not exact). */
export const POLL_TOLERANCE_MS = 500;
/** Expired authorizations are kept this long (a late poll gets `expired_token`), then deleted. */
const EXPIRED_RETENTION_MS = 24 * 3600 * 1000;
const DEFAULT_CODE_REQUESTS_PER_IP: FailureLimit = { limit: 30, windowMs: 15 * 60 * 1000 };
const USER_CODE_ATTEMPTS = 5;

/**
 * `client_id`: the CLI sends `svc-cli`. Clients are not registered (they are public clients, RFC
 * 8628 §5.6): any id of 1 to 64 visible ASCII characters is accepted; it is stored with the
 * code, shown on the approval page and must be sent again with every poll.
 */
function clientIdOf(params: Record<string, string>): string {
  const id = required(params, 'client_id', 'send the id of your application, e.g. client_id=svc-cli');
  if (id.length > MAX_CLIENT_ID_LENGTH || !/^[\x21-\x7e]+$/.test(id)) {
    throw invalidRequest(`client_id must be 1 to ${MAX_CLIENT_ID_LENGTH} visible ASCII characters without spaces, e.g. svc-cli`);
  }
  return id;
}

/** `scope`: space-separated; absent or empty means `read run`. */
function scopesOf(params: Record<string, string>): Scope[] {
  const requested = (params.scope ?? '').split(' ').filter((s) => s !== '');
  if (requested.length === 0) return [...DEFAULT_SCOPES];
  const unknown = requested.filter((s) => !(KNOWN_SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) {
    throw new OAuthError({ error: 'invalid_scope', description: `unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; scopes are ${KNOWN_SCOPES.join(' and ')}, separated by a space` });
  }
  return KNOWN_SCOPES.filter((s) => requested.includes(s));
}

/**
 * The client's side of the device flow: `POST /oauth/device/code` (RFC 8628 §3.1–3.2) and
 * `POST /oauth/token` with the device-code grant (§3.4–3.5), which answers a short-lived session
 * token and a refresh token, and with the refresh-token grant (RFC 6749 §6, rotated as OAuth 2.1
 * §4.3.1 asks). No authentication: the device code, then the refresh token, is the secret.
 * Answers and errors follow RFC 6749 (see docs/auth.md).
 */
export function deviceOAuthRouter(deps: DeviceRouteDeps): Router {
  const router = Router();
  const clock = deps.clock ?? (() => new Date());
  const codeRequests = { name: 'device-code-ip', ...(deps.codeRequestsPerIp ?? DEFAULT_CODE_REQUESTS_PER_IP) };

  /** A new session token and refresh token, as stored (hashes) and as answered (values). */
  function newSessionTokens(clientId: string, now: Date) {
    const access = issueToken('session');
    const refresh = issueRefreshToken();
    return {
      refresh,
      access,
      stored: {
        access: { name: `Device login (${clientId})`, hash: access.hash, displayPrefix: access.displayPrefix, expiresAt: new Date(now.getTime() + deps.sessionTokenTtlSeconds * 1000) },
        refreshHash: refresh.hash,
        refreshExpiresAt: new Date(now.getTime() + deps.sessionRefreshTokenTtlDays * DAY_MS),
      },
    };
  }

  function answerTokens(res: Response, accessToken: string, refreshToken: string, scopes: readonly string[]): void {
    noStore(res);
    res.status(200).json({ access_token: accessToken, token_type: 'Bearer', expires_in: deps.sessionTokenTtlSeconds, scope: scopes.join(' '), refresh_token: refreshToken });
  }

  /**
   * `grant_type=refresh_token`: a new session token and a new refresh token; the presented one
   * stops working in the same statement. One presented again after its rotation revokes the whole
   * login, its session tokens included (two holders of one refresh token: it leaked).
   */
  async function refreshGrant(params: Record<string, string>, res: Response): Promise<void> {
    const clientId = clientIdOf(params);
    const value = required(params, 'refresh_token', 'send the refresh_token of the last token response');
    const parsed = parseRefreshToken(value);
    if (!parsed.ok) throw new OAuthError({ error: 'invalid_grant', description: 'refresh_token is not a refresh token of this server (svcr_…); send the refresh_token of the last token response' });
    const now = clock();
    const tokens = newSessionTokens(clientId, now);
    const outcome = await deps.grants.refresh(parsed.hash, { kind: 'device', id: clientId }, now, { newRefreshHash: tokens.refresh.hash, refreshExpiresAt: tokens.stored.refreshExpiresAt, access: tokens.stored.access });
    if (!outcome.ok) {
      const why = {
        unknown: 'is not known to this client_id',
        replayed: 'was already used: refresh tokens are rotated on every use, and one used twice means it leaked, so this login and its session tokens are now revoked',
        expired: 'expired (unused too long, or the login reached its maximum age)',
        revoked: 'was revoked (signed out, or revoked under Settings, API tokens)',
      }[outcome.reason];
      throw new OAuthError({ error: 'invalid_grant', description: `the refresh token ${why}` });
    }
    answerTokens(res, tokens.access.value, tokens.refresh.value, outcome.issued.accessToken.scopes);
  }

  router.post('/oauth/device/code', routeLabel('/oauth/device/code'), oauthBody, async (req: Request, res: Response) => {
    const params = oauthParams(req);
    const clientId = clientIdOf(params);
    const scopes = scopesOf(params);
    const hit = await deps.limiter.hit(codeRequests, `ip:${req.ip ?? 'unknown'}`);
    if (!hit.allowed) {
      const seconds = Math.max(1, Math.ceil(hit.resetMs / 1000));
      throw new OAuthError({
        error: 'temporarily_unavailable',
        status: 429,
        description: `too many device codes requested from this address (${hit.limit} per ${codeRequests.windowMs / 60000} minutes); try again in ${seconds} s`,
        headers: { 'Retry-After': String(seconds) },
      });
    }
    const now = clock();
    await deps.authorizations.deleteExpired(new Date(now.getTime() - EXPIRED_RETENTION_MS), 100);
    const expiresAt = new Date(now.getTime() + deps.deviceCodeTtlSeconds * 1000);
    for (let attempt = 0; attempt < USER_CODE_ATTEMPTS; attempt++) {
      const codes = issueDeviceCodes();
      const created = await deps.authorizations.create({
        deviceCodeHash: codes.deviceCodeHash,
        userCodeHash: codes.userCodeHash,
        clientId,
        scopes,
        intervalSeconds: deps.pollIntervalSeconds,
        expiresAt,
        now,
      });
      if (!created) continue; // the user code is held by a live authorization: draw another
      noStore(res);
      res.status(200).json({
        device_code: codes.deviceCode,
        user_code: codes.userCode,
        verification_uri: deps.verificationUrl,
        verification_uri_complete: `${deps.verificationUrl}?user_code=${codes.userCode}`,
        expires_in: deps.deviceCodeTtlSeconds,
        interval: deps.pollIntervalSeconds,
      });
      return;
    }
    throw new Error(`no free user code after ${USER_CODE_ATTEMPTS} draws`);
  });
  allowOnly(router, '/oauth/device/code', ['POST']);

  router.post('/oauth/token', routeLabel('/oauth/token'), oauthBody, async (req: Request, res: Response) => {
    const params = oauthParams(req);
    const grantType = required(params, 'grant_type', `send grant_type=${DEVICE_GRANT_TYPE}`);
    if (grantType === REFRESH_GRANT_TYPE) return refreshGrant(params, res);
    if (grantType !== DEVICE_GRANT_TYPE) {
      throw new OAuthError({
        error: 'unsupported_grant_type',
        description: `grant_type "${grantType.slice(0, 100)}" is not supported; this endpoint issues tokens through the device flow (grant_type=${DEVICE_GRANT_TYPE}) and renews them (grant_type=${REFRESH_GRANT_TYPE})`,
      });
    }
    const clientId = clientIdOf(params);
    const deviceCode = required(params, 'device_code', 'send the device_code that POST /oauth/device/code returned');
    const now = clock();
    const polled = await deps.authorizations.recordPoll(hashDeviceCode(deviceCode), now, POLL_TOLERANCE_MS);
    const restart = 'start again with POST /oauth/device/code';
    if (!polled) throw new OAuthError({ error: 'invalid_grant', description: `the device_code is not known (or expired long ago); ${restart}` });
    const { authorization: a, slowDown } = polled;
    if (a.clientId !== clientId) throw new OAuthError({ error: 'invalid_grant', description: 'the device_code was issued to another client_id; send the client_id that requested it' });
    if (a.status === 'consumed') throw new OAuthError({ error: 'invalid_grant', description: `the device_code was already exchanged for a token; a device code is single use, ${restart}` });
    if (a.expiresAt.getTime() <= now.getTime()) throw new OAuthError({ error: 'expired_token', description: `the device_code expired at ${a.expiresAt.toISOString()}; ${restart}` });
    if (a.status === 'denied') throw new OAuthError({ error: 'access_denied', description: 'the user denied this login request' });
    if (a.status === 'pending') {
      if (slowDown) {
        throw new OAuthError({
          error: 'slow_down',
          description: `polling too fast; wait at least ${a.intervalSeconds} s between requests from now on`,
          extra: { interval: a.intervalSeconds },
        });
      }
      throw new OAuthError({ error: 'authorization_pending', description: 'the user has not approved the code yet; keep polling every interval seconds' });
    }
    const tokens = newSessionTokens(clientId, now);
    const redeemed = await deps.authorizations.redeem(a.id, now, {
      ...tokens.stored,
      expiresAt: new Date(now.getTime() + deps.sessionMaxAgeDays * DAY_MS),
      resource: deps.resource,
    });
    // Another poll redeemed it between our read and our update (or it expired just then).
    if (!redeemed) throw new OAuthError({ error: 'invalid_grant', description: `the device_code was already exchanged for a token; ${restart}` });
    answerTokens(res, tokens.access.value, tokens.refresh.value, redeemed.token.scopes);
  });
  allowOnly(router, '/oauth/token', ['POST']);

  router.use(['/oauth/device/code', '/oauth/token'], oauthErrors());
  return router;
}
