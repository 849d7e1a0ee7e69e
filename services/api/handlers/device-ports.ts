import type { RateLimiter } from '../../queue';
import type { DeviceAuthorizationRepository, MembershipRepository, OAuthRepository, OrganizationRepository, TokenRepository, UserRepository } from '../../store';
import type { TokenLookup } from '../auth/auth-context';

/** What the device-flow routes store and read (the store's repositories provide it). */
export type DeviceAuthorizations = Pick<DeviceAuthorizationRepository, 'create' | 'findByUserCodeHash' | 'recordPoll' | 'decide' | 'redeem' | 'deleteExpired'>;

/** A limit of failed attempts per key within a window. */
export interface FailureLimit {
  limit: number;
  windowMs: number;
}

/** Dependencies of the device flow (RFC 8628) and of `GET /v1/me`. */
export interface DeviceRouteDeps {
  authorizations: DeviceAuthorizations;
  organizations: Pick<OrganizationRepository, 'findById' | 'findBySlug'>;
  memberships: Pick<MembershipRepository, 'find'>;
  users: Pick<UserRepository, 'findById'>;
  /** Authentication, and the caller's own token for `GET /v1/me`. */
  tokens: TokenLookup & Pick<TokenRepository, 'findById'>;
  /** Redis rate limits shared by the API replicas (brute-force limits on user codes). */
  limiter: Pick<RateLimiter, 'hit'>;
  /** Where the person approves a code (the web editor's page), e.g. `https://host/device`. */
  verificationUrl: string;
  /** Lifetime of a device code and its user code. */
  deviceCodeTtlSeconds: number;
  /** Seconds a client waits between polls (raised by 5 on each `slow_down`). */
  pollIntervalSeconds: number;
  /** Device logins' refresh tokens: rotated on every refresh, a replay revokes the login (the grant). */
  grants: Pick<OAuthRepository, 'refresh'>;
  /** What device logins' tokens are for, recorded with the grant: the API's public base URL. */
  resource: string;
  /** Lifetime of a session (access) token, issued at login and on every refresh. */
  sessionTokenTtlSeconds: number;
  /** Lifetime of a device login's refresh token; each refresh issues a new one. */
  sessionRefreshTokenTtlDays: number;
  /** A device login's absolute end: refreshes stop working this long after `svc login`. */
  sessionMaxAgeDays: number;
  /** Failed user-code lookups, approvals and denials per user and per client IP (brute-force limit). */
  userCodeFailures: { perUser: number; perIp: number; windowMs: number };
  /** Device codes one client IP may request per window; default 30 per 15 minutes. */
  codeRequestsPerIp?: FailureLimit;
  clock?: () => Date;
}
