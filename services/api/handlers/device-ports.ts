import type { RateLimiter } from '../../queue';
import type { DeviceAuthorizationRepository, MembershipRepository, OrganizationRepository, TokenRepository, UserRepository } from '../../store';
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
  /** Lifetime of the session token a redeemed approval issues. */
  sessionTokenTtlDays: number;
  /** Failed user-code lookups, approvals and denials per user and per client IP (brute-force limit). */
  userCodeFailures: { perUser: number; perIp: number; windowMs: number };
  /** Device codes one client IP may request per window; default 30 per 15 minutes. */
  codeRequestsPerIp?: FailureLimit;
  clock?: () => Date;
}
