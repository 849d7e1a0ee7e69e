import { deleteExpiredRows } from './expired-rows';
import { OAuthRepository, type OAuthGrantRecord } from './oauth-repository';
import { inTransaction, rawRows, type Db } from './prisma-client';
import type { TokenSummary } from './token-repository';

/** Where a device authorization stands (RFC 8628): waiting for the user, decided, or redeemed. */
export type DeviceAuthorizationStatus = 'pending' | 'approved' | 'denied' | 'consumed';

/** One device login attempt: a device code the client polls with and a user code a person approves. */
export interface DeviceAuthorization {
  id: string;
  clientId: string;
  scopes: string[];
  status: DeviceAuthorizationStatus;
  /** Seconds the client must wait between polls; raised by 5 on every `slow_down`. */
  intervalSeconds: number;
  lastPolledAt: Date | null;
  /** Who approved or denied it. */
  userId: string | null;
  /** The organization the session token acts for (set on approval). */
  orgId: string | null;
  /** The first session token issued when the client redeemed the approval. */
  tokenId: string | null;
  expiresAt: Date;
  decidedAt: Date | null;
  createdAt: Date;
}

/** What {@link DeviceAuthorizationRepository.create} stores: hashes of the codes, never the codes. */
export interface NewDeviceAuthorization {
  deviceCodeHash: string;
  /** SHA-256 hex of the normalized user code. */
  userCodeHash: string;
  clientId: string;
  scopes: readonly string[];
  intervalSeconds: number;
  expiresAt: Date;
  /** Decides whether a row holding the same user code has expired (and may be replaced). */
  now: Date;
}

/** The outcome of a poll: the row after the poll, and whether the client polled too fast. */
export interface PollResult {
  authorization: DeviceAuthorization;
  /** True: the poll came sooner than the interval allows; the interval was raised by 5 s. */
  slowDown: boolean;
}

/** Why a user code could not be approved or denied. */
export type DecisionRefusal = 'unknown' | 'expired' | 'decided';

export type DecisionResult =
  | { ok: true; authorization: DeviceAuthorization }
  | { ok: false; reason: DecisionRefusal; authorization: DeviceAuthorization | null };

/** The session token to store when an approval is redeemed (from `issueToken('session')`). */
export interface SessionTokenToIssue {
  name: string;
  hash: string;
  displayPrefix: string;
  expiresAt: Date;
}

/** What a redeemed approval issues: a grant (the login's refresh-token family) with its first access and refresh tokens. */
export interface DeviceLoginToIssue {
  access: SessionTokenToIssue;
  /** SHA-256 hex of the first refresh token (from `issueRefreshToken`). */
  refreshHash: string;
  refreshExpiresAt: Date;
  /** The login's absolute end: no refresh token outlives it. */
  expiresAt: Date;
  /** What the tokens are for: the API's base URL. */
  resource: string;
}

/** RFC 8628 §3.5: a client told to `slow_down` adds 5 seconds to its interval from then on. */
export const SLOW_DOWN_STEP_SECONDS = 5;

const COLUMNS = 'id, client_id, scopes, status, interval_seconds, last_polled_at, user_id, org_id, token_id, expires_at, decided_at, created_at';

interface Row {
  id: string;
  client_id: string;
  scopes: string[] | null;
  status: string;
  interval_seconds: number;
  last_polled_at: Date | null;
  user_id: string | null;
  org_id: string | null;
  token_id: string | null;
  expires_at: Date;
  decided_at: Date | null;
  created_at: Date;
}

const STATUSES: readonly string[] = ['pending', 'approved', 'denied', 'consumed'] satisfies DeviceAuthorizationStatus[];

function toAuthorization(row: Row): DeviceAuthorization {
  if (!STATUSES.includes(row.status)) throw new Error(`device authorization ${row.id} has unknown status "${row.status}"`);
  return {
    id: row.id,
    clientId: row.client_id,
    scopes: row.scopes ?? [],
    status: row.status as DeviceAuthorizationStatus,
    intervalSeconds: Number(row.interval_seconds),
    lastPolledAt: row.last_polled_at,
    userId: row.user_id,
    orgId: row.org_id,
    tokenId: row.token_id,
    expiresAt: row.expires_at,
    decidedAt: row.decided_at,
    createdAt: row.created_at,
  };
}

/**
 * Device authorizations (RFC 8628), found by the SHA-256 of their device code (the client's side)
 * or of their user code (the approving person's side). Every state change is one conditional
 * statement, so concurrent polls and clicks cannot decide or redeem a code twice.
 */
export class DeviceAuthorizationRepository {
  constructor(private readonly db: Db) {}

  /**
   * Stores a new pending authorization. A row with the same user code that has expired is
   * replaced; one still live makes this return null (the caller draws another user code).
   */
  async create(input: NewDeviceAuthorization): Promise<DeviceAuthorization | null> {
    const insert = () =>
      rawRows<Row>(
        this.db,
        `INSERT INTO device_authorizations (device_code_hash, user_code_hash, client_id, scopes, interval_seconds, expires_at)
         VALUES ($1::text, $2::text, $3::text, $4::text[], $5::int, $6::timestamptz)
         ON CONFLICT (user_code_hash) DO NOTHING
         RETURNING ${COLUMNS}`,
        [input.deviceCodeHash, input.userCodeHash, input.clientId, [...input.scopes], input.intervalSeconds, input.expiresAt],
      );
    let rows = await insert();
    if (rows.length === 0) {
      const freed = await rawRows<{ id: string }>(
        this.db,
        'DELETE FROM device_authorizations WHERE user_code_hash = $1::text AND expires_at <= $2::timestamptz RETURNING id',
        [input.userCodeHash, input.now],
      );
      if (freed.length === 0) return null;
      rows = await insert();
    }
    return rows[0] ? toAuthorization(rows[0]) : null;
  }

  async findByDeviceCodeHash(hash: string): Promise<DeviceAuthorization | null> {
    const rows = await rawRows<Row>(this.db, `SELECT ${COLUMNS} FROM device_authorizations WHERE device_code_hash = $1::text`, [hash]);
    return rows[0] ? toAuthorization(rows[0]) : null;
  }

  async findByUserCodeHash(hash: string): Promise<DeviceAuthorization | null> {
    const rows = await rawRows<Row>(this.db, `SELECT ${COLUMNS} FROM device_authorizations WHERE user_code_hash = $1::text`, [hash]);
    return rows[0] ? toAuthorization(rows[0]) : null;
  }

  /**
   * Records a poll at `now` and decides `slow_down` in the same statement (the row is locked, so
   * concurrent polls are judged one after the other): a poll of a pending, unexpired code sooner
   * than `interval_seconds − toleranceMs` after the previous one raises the interval by 5 s, for
   * good. Null: no such device code.
   */
  async recordPoll(deviceCodeHash: string, now: Date, toleranceMs = 0): Promise<PollResult | null> {
    const rows = await rawRows<Row & { too_fast: boolean }>(
      this.db,
      `WITH previous AS (
         SELECT id,
                (status = 'pending' AND expires_at > $2::timestamptz AND last_polled_at IS NOT NULL
                 AND $2::timestamptz < last_polled_at + (interval_seconds * 1000 - $3::int) * interval '1 millisecond') AS too_fast
           FROM device_authorizations
          WHERE device_code_hash = $1::text
            FOR UPDATE
       )
       UPDATE device_authorizations d
          SET last_polled_at = $2::timestamptz,
              interval_seconds = CASE WHEN previous.too_fast THEN d.interval_seconds + $4::int ELSE d.interval_seconds END
         FROM previous
        WHERE d.id = previous.id
       RETURNING ${COLUMNS.split(', ').map((c) => `d.${c}`).join(', ')}, previous.too_fast`,
      [deviceCodeHash, now, Math.round(toleranceMs), SLOW_DOWN_STEP_SECONDS],
    );
    const row = rows[0];
    return row ? { authorization: toAuthorization(row), slowDown: row.too_fast === true } : null;
  }

  /**
   * Approves (for `orgId`) or denies a pending, unexpired code, once: a code already decided,
   * expired or unknown is refused with the reason.
   */
  async decide(
    userCodeHash: string,
    decision: { status: 'approved'; userId: string; orgId: string; now: Date } | { status: 'denied'; userId: string; now: Date },
  ): Promise<DecisionResult> {
    const orgId = decision.status === 'approved' ? decision.orgId : null;
    const rows = await rawRows<Row>(
      this.db,
      `UPDATE device_authorizations
          SET status = $2::text, user_id = $3::uuid, org_id = $4::uuid, decided_at = $5::timestamptz
        WHERE user_code_hash = $1::text AND status = 'pending' AND expires_at > $5::timestamptz
       RETURNING ${COLUMNS}`,
      [userCodeHash, decision.status, decision.userId, orgId, decision.now],
    );
    if (rows[0]) return { ok: true, authorization: toAuthorization(rows[0]) };
    const current = await this.findByUserCodeHash(userCodeHash);
    return { ok: false, reason: refusalOf(current, decision.now), authorization: current };
  }

  /**
   * Redeems an approved, unexpired authorization exactly once: marks it consumed and stores a
   * grant of the device flow's client with its refresh token and first session token (the
   * approved scopes, for the approver and the organization they chose) in one transaction. Of
   * concurrent polls only one gets the tokens; the others get null.
   */
  async redeem(id: string, now: Date, tokens: DeviceLoginToIssue): Promise<{ authorization: DeviceAuthorization; token: TokenSummary; grant: OAuthGrantRecord } | null> {
    return inTransaction(this.db, async (tx) => {
      const rows = await rawRows<Row>(
        tx,
        `UPDATE device_authorizations SET status = 'consumed'
          WHERE id = $1::uuid AND status = 'approved' AND expires_at > $2::timestamptz
          RETURNING ${COLUMNS}`,
        [id, now],
      );
      const row = rows[0];
      if (!row || row.user_id === null || row.org_id === null) return null;
      const { grant, accessToken } = await new OAuthRepository(tx).createGrant({
        client: { kind: 'device', id: row.client_id },
        userId: row.user_id,
        orgId: row.org_id,
        scopes: row.scopes ?? [],
        resource: tokens.resource,
        refreshHash: tokens.refreshHash,
        refreshExpiresAt: tokens.refreshExpiresAt,
        expiresAt: tokens.expiresAt,
        access: tokens.access,
      });
      await rawRows(tx, 'UPDATE device_authorizations SET token_id = $2::uuid WHERE id = $1::uuid', [id, accessToken.id]);
      return { authorization: { ...toAuthorization(row), tokenId: accessToken.id }, token: accessToken, grant };
    });
  }

  /** Deletes up to `limit` authorizations that expired before `before`; returns how many. */
  deleteExpired(before: Date, limit = 500): Promise<number> {
    return deleteExpiredRows(this.db, 'device_authorizations', before, limit);
  }
}

/** Why a code that could not be decided was refused (see {@link DeviceAuthorizationRepository.decide}). */
export function refusalOf(current: DeviceAuthorization | null, now: Date): DecisionRefusal {
  if (!current) return 'unknown';
  if (current.status !== 'pending') return 'decided';
  return current.expiresAt.getTime() <= now.getTime() ? 'expired' : 'decided';
}
