import type { TokenKind } from '../platform/access-token';
import type { AccessToken as AccessTokenRow } from './prisma-generated';
import { queryRows, type SqlPool } from './hot-sql';
import { rawRows, type Db } from './prisma-client';
import { tokensRevokedHere } from './token-changes';

/** A stored token as authentication needs it (the API's `TokenRecord`). */
export interface TokenRecord {
  id: string;
  userId: string;
  orgId: string;
  scopes: string[];
  kind: TokenKind;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** A token as its owner sees it in a listing: never the secret, never the hash. */
export interface TokenSummary extends TokenRecord {
  name: string;
  displayPrefix: string;
  lastUsedAt: Date | null;
  createdAt: Date;
}

/** What {@link TokenRepository.create} stores: the hash of a token from `issueToken`, never its value. */
export interface NewToken {
  userId: string;
  orgId: string;
  name: string;
  /** SHA-256 hex of the token value. */
  hash: string;
  displayPrefix: string;
  scopes: readonly string[];
  kind: TokenKind;
  expiresAt?: Date | null;
  /** The OAuth grant an `oauth` token is issued under (revoking either revokes the other). */
  oauthGrantId?: string | null;
}

function toKind(row: Pick<AccessTokenRow, 'id' | 'kind'>): TokenKind {
  if (row.kind !== 'personal' && row.kind !== 'session' && row.kind !== 'browser' && row.kind !== 'oauth') throw new Error(`access token ${row.id} has unknown kind "${row.kind}"`);
  return row.kind;
}

function toRecord(row: Pick<AccessTokenRow, 'id' | 'userId' | 'orgId' | 'scopes' | 'kind' | 'expiresAt' | 'revokedAt'>): TokenRecord {
  return { id: row.id, userId: row.userId, orgId: row.orgId, scopes: row.scopes, kind: toKind(row), expiresAt: row.expiresAt, revokedAt: row.revokedAt };
}

function toSummary(row: AccessTokenRow): TokenSummary {
  return { ...toRecord(row), name: row.name, displayPrefix: row.displayPrefix, lastUsedAt: row.lastUsedAt, createdAt: row.createdAt };
}

/** The token with a hash, as authentication reads it (`findTokenByHash`, `TokenRepository.findByHash`). */
// The column is a nullable array (Prisma's scalar lists); a row written outside the service with
// no scopes reads as none, not as a crash of every request it authenticates.
const BY_HASH = "SELECT id, user_id, org_id, COALESCE(scopes, '{}') AS scopes, kind, expires_at, revoked_at FROM access_tokens WHERE token_hash = $1::text";
type ByHashRow = { id: string; user_id: string; org_id: string; scopes: string[]; kind: string; expires_at: Date | null; revoked_at: Date | null };

function recordOfRow(row: ByHashRow | undefined): TokenRecord | null {
  if (!row) return null;
  return toRecord({ id: row.id, userId: row.user_id, orgId: row.org_id, scopes: row.scopes, kind: row.kind, expiresAt: row.expires_at, revokedAt: row.revoked_at });
}

/**
 * The token with this hash, on the pool: every authenticated API request asks this, so it skips
 * Prisma's query layer (see hot-sql.ts). Revoked and expired ones included.
 */
export async function findTokenByHash(pool: SqlPool, hash: string): Promise<TokenRecord | null> {
  return recordOfRow((await queryRows<ByHashRow>(pool, BY_HASH, [hash]))[0]);
}

/** Access tokens (personal and device-flow session tokens), looked up by the SHA-256 of their value. */
export class TokenRepository {
  constructor(private readonly db: Db) {}

  /** Stores a new token. Expiry limits (at most 365 days) are the caller's to enforce. */
  async create(input: NewToken): Promise<TokenSummary> {
    const row = await this.db.accessToken.create({
      data: {
        userId: input.userId,
        orgId: input.orgId,
        name: input.name,
        tokenHash: input.hash,
        displayPrefix: input.displayPrefix,
        scopes: [...input.scopes],
        kind: input.kind,
        expiresAt: input.expiresAt ?? null,
        oauthGrantId: input.oauthGrantId ?? null,
      },
    });
    return toSummary(row);
  }

  /** The token with this hash, revoked and expired ones included (the caller says why it is refused); on the caller's client or transaction. */
  async findByHash(hash: string): Promise<TokenRecord | null> {
    return recordOfRow((await rawRows<ByHashRow>(this.db, BY_HASH, [hash]))[0]);
  }

  async findById(id: string): Promise<TokenSummary | null> {
    const row = await this.db.accessToken.findUnique({ where: { id } });
    return row ? toSummary(row) : null;
  }

  /**
   * Revokes a token that is not revoked yet; with `userId`, only if that user owns it. Returns
   * whether this call revoked it (false: unknown, someone else's, or already revoked).
   */
  async revoke(id: string, options: { userId?: string; at?: Date } = {}): Promise<boolean> {
    // One statement: an MCP client's access token takes its OAuth grant (the refresh token) and
    // the grant's other access tokens with it, or the client would just refresh (docs/auth.md).
    const rows = await rawRows<{ revoked: number }>(
      this.db,
      `WITH t AS (
         UPDATE access_tokens SET revoked_at = $2::timestamptz
          WHERE id = $1::uuid AND revoked_at IS NULL AND ($3::uuid IS NULL OR user_id = $3::uuid)
         RETURNING oauth_grant_id),
       g AS (
         UPDATE oauth_grants SET revoked_at = $2::timestamptz
          WHERE id IN (SELECT oauth_grant_id FROM t) AND revoked_at IS NULL
         RETURNING id),
       others AS (
         UPDATE access_tokens SET revoked_at = $2::timestamptz
          WHERE oauth_grant_id IN (SELECT id FROM g) AND revoked_at IS NULL AND id <> $1::uuid
         RETURNING id)
       SELECT (SELECT count(*) FROM t)::int AS revoked, (SELECT count(*) FROM others)::int AS others`,
      [id, options.at ?? new Date(), options.userId ?? null],
    );
    const revoked = rows[0]?.revoked === 1;
    if (revoked && tokensRevokedHere.hasSubscribers) tokensRevokedHere.publish({ tokenId: id });
    return revoked;
  }

  /** A user's tokens, newest first, revoked and expired ones included; optionally of one organization or kind. */
  async listForUser(userId: string, filter: { orgId?: string; kind?: TokenKind } = {}): Promise<TokenSummary[]> {
    const rows = await this.db.accessToken.findMany({
      where: { userId, ...(filter.orgId === undefined ? {} : { orgId: filter.orgId }), ...(filter.kind === undefined ? {} : { kind: filter.kind }) },
      orderBy: { createdAt: 'desc' },
    });
    return rows.map(toSummary);
  }

  /**
   * Records that these tokens were used at `at`, in one statement for a batch collected by the
   * caller (writing on every request would put a write on the hot path). Never moves a time back.
   */
  async touchLastUsed(ids: readonly string[], at: Date): Promise<number> {
    if (ids.length === 0) return 0;
    const { count } = await this.db.accessToken.updateMany({
      where: { id: { in: [...new Set(ids)] }, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: at } }] },
      data: { lastUsedAt: at },
    });
    return count;
  }
}
