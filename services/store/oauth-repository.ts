import type { Prisma } from './prisma-generated';
import { inTransaction, rawRows, type Db } from './prisma-client';
import { tokensRevokedHere } from './token-changes';
import { TokenRepository, type TokenSummary } from './token-repository';

/**
 * The storage of the MCP authorization server (docs/auth.md, "OAuth for MCP clients"): registered
 * clients, authorization codes and grants. Codes and refresh tokens are stored as SHA-256 hashes
 * only, like access tokens; the access tokens themselves are `oauth` rows of `access_tokens`.
 */

/** A registered (public) client. */
export interface OAuthClientRecord {
  id: string;
  name: string;
  redirectUris: string[];
  /** The registration as answered (RFC 7591 client metadata). */
  metadata: Record<string, unknown>;
  createdAt: Date;
}

/** An authorization code as the token endpoint checks it. */
export interface OAuthCodeRecord {
  id: string;
  clientId: string;
  userId: string;
  orgId: string;
  scopes: string[];
  redirectUri: string;
  codeChallenge: string;
  resource: string;
  expiresAt: Date;
  consumedAt: Date | null;
  grantId: string | null;
}

/** A grant: a person's consent to a client, with its current refresh token. */
export interface OAuthGrantRecord {
  id: string;
  clientId: string;
  userId: string;
  orgId: string;
  scopes: string[];
  resource: string;
  refreshExpiresAt: Date;
  revokedAt: Date | null;
}

/** An access token to store with a grant: from `issueToken('oauth')`, never its value. */
export interface OAuthAccessTokenToIssue {
  name: string;
  hash: string;
  displayPrefix: string;
  expiresAt: Date;
}

/** What issuing tokens under a grant produced. */
export interface IssuedGrantTokens {
  grant: OAuthGrantRecord;
  accessToken: TokenSummary;
}

export type RefreshOutcome =
  | { ok: true; issued: IssuedGrantTokens }
  /** unknown: no such refresh token (or another client's); replayed: an already rotated one (the grant is now revoked); expired, revoked. */
  | { ok: false; reason: 'unknown' | 'replayed' | 'expired' | 'revoked' };

export type ExchangeOutcome =
  | { ok: true; issued: IssuedGrantTokens }
  /** used: exchanged before (the grant it gave is now revoked, RFC 6749 §4.1.2); expired; unknown. */
  | { ok: false; reason: 'unknown' | 'used' | 'expired' };

type GrantRow = {
  id: string;
  client_id: string;
  user_id: string;
  org_id: string;
  scopes: string[];
  resource: string;
  refresh_expires_at: Date;
  revoked_at: Date | null;
};

const GRANT_COLUMNS = 'id, client_id, user_id, org_id, scopes, resource, refresh_expires_at, revoked_at';

function toGrant(row: GrantRow): OAuthGrantRecord {
  return {
    id: row.id,
    clientId: row.client_id,
    userId: row.user_id,
    orgId: row.org_id,
    scopes: row.scopes,
    resource: row.resource,
    refreshExpiresAt: row.refresh_expires_at,
    revokedAt: row.revoked_at,
  };
}

export class OAuthRepository {
  constructor(private readonly db: Db) {}

  /** Stores a client registered by dynamic client registration. */
  async createClient(input: { id: string; name: string; redirectUris: readonly string[]; metadata: Record<string, unknown> }): Promise<OAuthClientRecord> {
    const row = await this.db.oAuthClient.create({
      data: { id: input.id, name: input.name, redirectUris: [...input.redirectUris], metadata: input.metadata as Prisma.InputJsonValue },
    });
    return { ...row, metadata: row.metadata as Record<string, unknown> };
  }

  async findClient(id: string): Promise<OAuthClientRecord | null> {
    const row = await this.db.oAuthClient.findUnique({ where: { id } });
    return row ? { ...row, metadata: row.metadata as Record<string, unknown> } : null;
  }

  /** Stores an authorization code (its hash), bound to client, redirect URI, PKCE challenge and resource. */
  async createCode(input: Omit<OAuthCodeRecord, 'id' | 'consumedAt' | 'grantId'> & { codeHash: string }): Promise<void> {
    await this.db.oAuthAuthorizationCode.create({
      data: {
        codeHash: input.codeHash,
        clientId: input.clientId,
        userId: input.userId,
        orgId: input.orgId,
        scopes: [...input.scopes],
        redirectUri: input.redirectUri,
        codeChallenge: input.codeChallenge,
        resource: input.resource,
        expiresAt: input.expiresAt,
      },
    });
  }

  /** The code with this hash, used and expired ones included (the caller says why it is refused). */
  async findCode(codeHash: string): Promise<OAuthCodeRecord | null> {
    const row = await this.db.oAuthAuthorizationCode.findUnique({ where: { codeHash } });
    if (!row) return null;
    const { codeHash: _hash, createdAt: _created, ...code } = row;
    return code;
  }

  /** Deletes up to `limit` codes that expired before `before`. */
  async deleteExpiredCodes(before: Date, limit = 500): Promise<number> {
    const rows = await rawRows<{ id: string }>(
      this.db,
      `DELETE FROM oauth_authorization_codes
        WHERE id IN (SELECT id FROM oauth_authorization_codes WHERE expires_at < $1::timestamptz ORDER BY expires_at LIMIT $2::int)
       RETURNING id`,
      [before, limit],
    );
    return rows.length;
  }

  /**
   * Exchanges an unexpired, unused code for a new grant (with its refresh token) and an access
   * token, in one transaction: of concurrent exchanges exactly one succeeds. A second exchange of
   * a code revokes the grant the first one made (the code was stolen, or the client is broken).
   */
  async exchangeCode(codeHash: string, now: Date, tokens: { refreshHash: string; refreshExpiresAt: Date; access: OAuthAccessTokenToIssue }): Promise<ExchangeOutcome> {
    return inTransaction(this.db, async (tx) => {
      const consumed = await rawRows<{ id: string; client_id: string; user_id: string; org_id: string; scopes: string[]; resource: string }>(
        tx,
        `UPDATE oauth_authorization_codes SET consumed_at = $2::timestamptz
          WHERE code_hash = $1::text AND consumed_at IS NULL AND expires_at > $2::timestamptz
          RETURNING id, client_id, user_id, org_id, scopes, resource`,
        [codeHash, now],
      );
      const code = consumed[0];
      if (!code) {
        const current = await new OAuthRepository(tx).findCode(codeHash);
        if (!current) return { ok: false, reason: 'unknown' };
        if (current.consumedAt === null) return { ok: false, reason: 'expired' };
        if (current.grantId) await new OAuthRepository(tx).revokeGrant(current.grantId, now);
        return { ok: false, reason: 'used' };
      }
      const grants = await rawRows<GrantRow>(
        tx,
        `INSERT INTO oauth_grants (client_id, user_id, org_id, scopes, resource, refresh_token_hash, refresh_expires_at)
         VALUES ($1::uuid, $2::uuid, $3::uuid, $4::text[], $5::text, $6::text, $7::timestamptz)
         RETURNING ${GRANT_COLUMNS}`,
        [code.client_id, code.user_id, code.org_id, code.scopes, code.resource, tokens.refreshHash, tokens.refreshExpiresAt],
      );
      const grant = toGrant(grants[0]!);
      await rawRows(tx, 'UPDATE oauth_authorization_codes SET grant_id = $2::uuid WHERE id = $1::uuid', [code.id, grant.id]);
      const accessToken = await issueAccess(tx, grant, tokens.access);
      return { ok: true, issued: { grant, accessToken } };
    });
  }

  /**
   * Rotates a grant's refresh token and issues a new access token, in one transaction: the old
   * refresh token stops working at once. Presenting a refresh token that was already rotated
   * revokes the whole grant (OAuth 2.1 §4.3.1: a replay means one of the two copies leaked).
   * `scopes`, when given, narrows the new access token (never widens it).
   */
  async refresh(refreshHash: string, clientId: string, now: Date, tokens: { newRefreshHash: string; refreshExpiresAt: Date; access: OAuthAccessTokenToIssue; scopes?: readonly string[] }): Promise<RefreshOutcome> {
    return inTransaction(this.db, async (tx) => {
      const rotated = await rawRows<GrantRow>(
        tx,
        `UPDATE oauth_grants
            SET refresh_token_hash = $2::text, previous_refresh_token_hash = $1::text, refresh_expires_at = $5::timestamptz
          WHERE refresh_token_hash = $1::text AND client_id = $3::uuid AND revoked_at IS NULL AND refresh_expires_at > $4::timestamptz
          RETURNING ${GRANT_COLUMNS}`,
        [refreshHash, tokens.newRefreshHash, clientId, now, tokens.refreshExpiresAt],
      );
      if (rotated[0]) {
        const grant = toGrant(rotated[0]);
        const scopes = tokens.scopes ? grant.scopes.filter((s) => tokens.scopes!.includes(s)) : grant.scopes;
        const accessToken = await issueAccess(tx, { ...grant, scopes }, tokens.access);
        return { ok: true, issued: { grant, accessToken } };
      }
      const found = await rawRows<GrantRow & { refresh_token_hash: string }>(
        tx,
        `SELECT ${GRANT_COLUMNS}, refresh_token_hash FROM oauth_grants
          WHERE (refresh_token_hash = $1::text OR previous_refresh_token_hash = $1::text) AND client_id = $2::uuid`,
        [refreshHash, clientId],
      );
      const grant = found[0];
      if (!grant) return { ok: false, reason: 'unknown' };
      if (grant.revoked_at) return { ok: false, reason: 'revoked' };
      if (grant.refresh_token_hash !== refreshHash) {
        await new OAuthRepository(tx).revokeGrant(grant.id, now);
        return { ok: false, reason: 'replayed' };
      }
      return { ok: false, reason: 'expired' };
    });
  }

  /** Revokes a grant and every access token issued under it; false when it was already revoked. */
  async revokeGrant(grantId: string, at: Date): Promise<boolean> {
    const rows = await rawRows<{ revoked: number }>(
      this.db,
      `WITH g AS (UPDATE oauth_grants SET revoked_at = $2::timestamptz WHERE id = $1::uuid AND revoked_at IS NULL RETURNING id),
       t AS (UPDATE access_tokens SET revoked_at = $2::timestamptz WHERE oauth_grant_id IN (SELECT id FROM g) AND revoked_at IS NULL RETURNING id)
       SELECT (SELECT count(*) FROM g)::int AS revoked`,
      [grantId, at],
    );
    const revoked = rows[0]?.revoked === 1;
    if (revoked && tokensRevokedHere.hasSubscribers) tokensRevokedHere.publish({ grantId });
    return revoked;
  }

  /** The grant whose current refresh token has this hash, if it belongs to the client. */
  async findGrantByRefreshHash(refreshHash: string, clientId: string): Promise<OAuthGrantRecord | null> {
    const rows = await rawRows<GrantRow>(this.db, `SELECT ${GRANT_COLUMNS} FROM oauth_grants WHERE refresh_token_hash = $1::text AND client_id = $2::uuid`, [refreshHash, clientId]);
    return rows[0] ? toGrant(rows[0]) : null;
  }

  /** The client an `oauth` access token was issued to (through its grant), or null. */
  async clientOfAccessToken(tokenId: string): Promise<string | null> {
    const rows = await rawRows<{ client_id: string }>(
      this.db,
      'SELECT g.client_id FROM access_tokens t JOIN oauth_grants g ON g.id = t.oauth_grant_id WHERE t.id = $1::uuid',
      [tokenId],
    );
    return rows[0]?.client_id ?? null;
  }
}

/** Stores an access token under a grant: the grant's user, organization and scopes. */
async function issueAccess(db: Db, grant: OAuthGrantRecord, access: OAuthAccessTokenToIssue): Promise<TokenSummary> {
  return new TokenRepository(db).create({
    userId: grant.userId,
    orgId: grant.orgId,
    name: access.name,
    hash: access.hash,
    displayPrefix: access.displayPrefix,
    scopes: grant.scopes,
    kind: 'oauth',
    expiresAt: access.expiresAt,
    oauthGrantId: grant.id,
  });
}
