import type { Scope, TokenSummaryBody } from '../../contract';
import { issueToken } from '../../platform/access-token';
import { AppError } from '../../platform/app-error';
import type { NewToken, OrganizationRepository, TokenRepository, TokenSummary, UserRepository } from '../../store';
import { authOf, type Handler } from './handler-types';

/** Port: the token store (`TokenRepository` satisfies it). */
export interface TokenStore {
  create(input: NewToken & { kind: 'personal' }): Promise<TokenSummary>;
  listForUser(userId: string, filter: { orgId?: string }): Promise<TokenSummary[]>;
  revoke(id: string, options: { userId?: string }): Promise<boolean>;
  findById: TokenRepository['findById'];
}

export interface AccountHandlerDeps {
  tokens: TokenStore;
  users: Pick<UserRepository, 'findById'>;
  organizations: Pick<OrganizationRepository, 'findById'>;
  now?: () => Date;
}

const DAY_MS = 86_400_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function summaryBody(row: TokenSummary): TokenSummaryBody {
  return {
    id: row.id,
    kind: row.kind,
    name: row.name,
    prefix: row.displayPrefix,
    scopes: row.scopes.filter((s): s is Scope => s === 'read' || s === 'run'),
    createdAt: row.createdAt.toISOString(),
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    expiresAt: row.expiresAt?.toISOString() ?? null,
  };
}

/** The caller; these routes are `auth: 'required'`, so `invoke` guarantees one. */

/**
 * The caller's account: `me.get` (`svc whoami`), and personal access tokens (the web editor's
 * Settings, API tokens page and `svc` use these): `tokens.list` the caller's live tokens in
 * their organization, `tokens.create` one whose value is answered exactly once, `tokens.revoke`
 * one, after which the next request with it is refused. See docs/auth.md.
 */
export function accountHandlers(deps: AccountHandlerDeps): {
  'me.get': Handler<'me.get'>;
  'tokens.list': Handler<'tokens.list'>;
  'tokens.create': Handler<'tokens.create'>;
  'tokens.revoke': Handler<'tokens.revoke'>;
} {
  const now = deps.now ?? (() => new Date());
  return {
    'me.get': async (_input, ctx) => {
      const auth = authOf(ctx);
      const [user, organization, token] = await Promise.all([deps.users.findById(auth.userId), deps.organizations.findById(auth.orgId), deps.tokens.findById(auth.tokenId)]);
      // The rows cascade with their user and organization: a token that authenticated has both.
      if (!user || !organization || !token) throw new AppError({ code: 'unauthorized', message: 'the account of this token no longer exists' });
      return {
        user: { id: user.id, email: user.email, name: user.name },
        organization: { id: organization.id, slug: organization.slug, name: organization.name },
        token: { id: token.id, kind: token.kind, name: token.name, displayPrefix: token.displayPrefix, scopes: [...auth.scopes], expiresAt: token.expiresAt?.toISOString() ?? null },
      };
    },

    'tokens.list': async (_input, ctx) => {
      const auth = authOf(ctx);
      const at = now().getTime();
      const rows = await deps.tokens.listForUser(auth.userId, { orgId: auth.orgId });
      // Revoked and expired tokens no longer act; listing them would only invite confusion.
      const live = rows.filter((row) => row.revokedAt === null && (row.expiresAt === null || row.expiresAt.getTime() > at));
      return { tokens: live.map(summaryBody) };
    },

    'tokens.create': async (input, ctx) => {
      const auth = authOf(ctx);
      if (input.name.trim() === '') throw new AppError({ code: 'validation_failed', message: 'name must not be blank: say what the token is for' });
      const missing = input.scopes.filter((scope) => !auth.scopes.includes(scope));
      if (missing.length > 0) {
        throw new AppError({ code: 'insufficient_scope', message: `your session lacks the ${missing.map((s) => `"${s}"`).join(' and ')} scope, so it cannot create a token with it` });
      }
      const issued = issueToken('personal');
      const expiresAt = input.expiresInDays === undefined ? null : new Date(now().getTime() + input.expiresInDays * DAY_MS);
      const row = await deps.tokens.create({
        userId: auth.userId,
        orgId: auth.orgId,
        name: input.name.trim(),
        hash: issued.hash,
        displayPrefix: issued.displayPrefix,
        scopes: input.scopes,
        kind: 'personal',
        expiresAt,
      });
      return { ...summaryBody(row), token: issued.value };
    },

    'tokens.revoke': async ({ id }, ctx) => {
      const revoked = UUID.test(id) && (await deps.tokens.revoke(id, { userId: authOf(ctx).userId }));
      if (!revoked) throw new AppError({ code: 'not_found', message: `you have no live token with id "${id}"; list them with GET /v1/tokens` });
      return null;
    },
  };
}
