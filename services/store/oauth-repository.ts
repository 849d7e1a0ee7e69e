import { deleteExpiredRows } from './expired-rows';
import type { Prisma } from './prisma-generated';
import { inTransaction, rawRows, type Db } from './prisma-client';
import { tokensRevokedHere } from './token-changes';
import { TokenRepository, type TokenSummary } from './token-repository';

/**
 * The storage of the service's OAuth (docs/auth.md): the MCP authorization server's registered
 * clients and authorization codes, and the grants of both MCP clients and device logins (`svc
 * login`). A grant is one refresh token's family: its current refresh token, the one it replaced,
 * and the access tokens issued under it (`oauth` rows of `access_tokens` for an MCP client,
 * `session` rows for a device login). Codes and refresh tokens are stored as SHA-256 hashes only,
 * like access tokens.
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

/**
 * Whose grant: a registered MCP client (its UUID), or the device flow's `client_id` of a device
 * login (`svc-cli`; not registered). A refresh token is only ever accepted from its own client.
 */
export type GrantClient = { kind: 'mcp'; id: string } | { kind: 'device'; id: string };

/** A grant: a person's consent to a client, with its current refresh token. */
export interface OAuthGrantRecord {
  id: string;
  client: GrantClient;
  userId: string;
  orgId: string;
  scopes: string[];
  resource: string;
  refreshExpiresAt: Date;
  /** The grant's absolute end (device logins): no refresh token outlives it; null: none. */
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** What {@link OAuthRepository.createGrant} stores: the grant, its first refresh token (hash) and access token. */
export interface NewGrant {
  client: GrantClient;
  userId: string;
  orgId: string;
  scopes: readonly string[];
  resource: string;
  refreshHash: string;
  refreshExpiresAt: Date;
  /** The grant's absolute end; omitted: none. */
  expiresAt?: Date | null;
  access: OAuthAccessTokenToIssue;
}

/** An access token to store with a grant: from `issueToken` (`oauth` for an MCP client, `session` for a device login), never its value. */
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
  client_id: string | null;
  device_client_id: string | null;
  user_id: string;
  org_id: string;
  scopes: string[];
  resource: string;
  refresh_expires_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
};

const GRANT_COLUMNS = 'id, client_id, device_client_id, user_id, org_id, scopes, resource, refresh_expires_at, expires_at, revoked_at';

function toGrant(row: GrantRow): OAuthGrantRecord {
  const client: GrantClient | null = row.client_id !== null ? { kind: 'mcp', id: row.client_id } : row.device_client_id !== null ? { kind: 'device', id: row.device_client_id } : null;
  if (!client) throw new Error(`OAuth grant ${row.id} has neither a client_id nor a device_client_id`);
  return {
    id: row.id,
    client,
    userId: row.user_id,
    orgId: row.org_id,
    scopes: row.scopes,
    resource: row.resource,
    refreshExpiresAt: row.refresh_expires_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

/** The client columns' values for a {@link GrantClient}: `[client_id, device_client_id]`, one of them null. */
const clientColumns = (client: GrantClient): [string | null, string | null] => (client.kind === 'mcp' ? [client.id, null] : [null, client.id]);

/** SQL matching a grant's client, given `client_id` and `device_client_id` as the parameters `$a` and `$b`. */
const CLIENT_MATCHES = (a: number, b: number) => `client_id IS NOT DISTINCT FROM $${a}::uuid AND device_client_id IS NOT DISTINCT FROM $${b}::text`;

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
  deleteExpiredCodes(before: Date, limit = 500): Promise<number> {
    return deleteExpiredRows(this.db, 'oauth_authorization_codes', before, limit);
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
      const issued = await new OAuthRepository(tx).createGrant({
        client: { kind: 'mcp', id: code.client_id },
        userId: code.user_id,
        orgId: code.org_id,
        scopes: code.scopes,
        resource: code.resource,
        refreshHash: tokens.refreshHash,
        refreshExpiresAt: tokens.refreshExpiresAt,
        access: tokens.access,
      });
      await rawRows(tx, 'UPDATE oauth_authorization_codes SET grant_id = $2::uuid WHERE id = $1::uuid', [code.id, issued.grant.id]);
      return { ok: true, issued };
    });
  }

  /**
   * Stores a new grant with its first refresh token and access token. Call it in the transaction
   * that consumes what the grant was given for (an authorization code, a device code), so that is
   * given once. The refresh token never outlives the grant's `expiresAt`.
   */
  async createGrant(input: NewGrant): Promise<IssuedGrantTokens> {
    const [clientId, deviceClientId] = clientColumns(input.client);
    const grants = await rawRows<GrantRow>(
      this.db,
      `INSERT INTO oauth_grants (client_id, device_client_id, user_id, org_id, scopes, resource, refresh_token_hash, refresh_expires_at, expires_at)
       VALUES ($1::uuid, $2::text, $3::uuid, $4::uuid, $5::text[], $6::text, $7::text, LEAST($8::timestamptz, $9::timestamptz), $9::timestamptz)
       RETURNING ${GRANT_COLUMNS}`,
      [clientId, deviceClientId, input.userId, input.orgId, [...input.scopes], input.resource, input.refreshHash, input.refreshExpiresAt, input.expiresAt ?? null],
    );
    const grant = toGrant(grants[0]!);
    const accessToken = await issueAccess(this.db, grant, input.access);
    return { grant, accessToken };
  }

  /**
   * Rotates a grant's refresh token and issues a new access token, in one transaction: the old
   * refresh token stops working at once. Presenting a refresh token that was already rotated
   * revokes the whole grant (OAuth 2.1 §4.3.1: a replay means one of the two copies leaked).
   * `scopes`, when given, narrows the new access token (never widens it). The new refresh token
   * expires at `refreshExpiresAt`, or at the grant's own end if that comes first.
   */
  async refresh(refreshHash: string, client: GrantClient, now: Date, tokens: { newRefreshHash: string; refreshExpiresAt: Date; access: OAuthAccessTokenToIssue; scopes?: readonly string[] }): Promise<RefreshOutcome> {
    const [clientId, deviceClientId] = clientColumns(client);
    return inTransaction(this.db, async (tx) => {
      const rotated = await rawRows<GrantRow>(
        tx,
        `UPDATE oauth_grants
            SET refresh_token_hash = $2::text, previous_refresh_token_hash = $1::text, refresh_expires_at = LEAST($5::timestamptz, expires_at)
          WHERE refresh_token_hash = $1::text AND ${CLIENT_MATCHES(3, 6)} AND revoked_at IS NULL AND refresh_expires_at > $4::timestamptz
          RETURNING ${GRANT_COLUMNS}`,
        [refreshHash, tokens.newRefreshHash, clientId, now, tokens.refreshExpiresAt, deviceClientId],
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
          WHERE (refresh_token_hash = $1::text OR previous_refresh_token_hash = $1::text) AND ${CLIENT_MATCHES(2, 3)}`,
        [refreshHash, clientId, deviceClientId],
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
  async findGrantByRefreshHash(refreshHash: string, client: GrantClient): Promise<OAuthGrantRecord | null> {
    const rows = await rawRows<GrantRow>(this.db, `SELECT ${GRANT_COLUMNS} FROM oauth_grants WHERE refresh_token_hash = $1::text AND ${CLIENT_MATCHES(2, 3)}`, [refreshHash, ...clientColumns(client)]);
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

/** Stores an access token under a grant: the grant's user, organization and scopes; `oauth` for an MCP client, `session` for a device login. */
async function issueAccess(db: Db, grant: OAuthGrantRecord, access: OAuthAccessTokenToIssue): Promise<TokenSummary> {
  return new TokenRepository(db).create({
    userId: grant.userId,
    orgId: grant.orgId,
    name: access.name,
    hash: access.hash,
    displayPrefix: access.displayPrefix,
    scopes: grant.scopes,
    kind: grant.client.kind === 'mcp' ? 'oauth' : 'session',
    expiresAt: access.expiresAt,
    oauthGrantId: grant.id,
  });
}
