import express, { Router, type Request, type Response } from 'express';
import { TokenCreateInputSchema, validate, type Scope, type TokenCreatedBody, type TokenListBody, type TokenSummaryBody } from '../../contract';
import { issueToken } from '../../platform/access-token';
import { AppError } from '../../platform/app-error';
import type { NewToken } from '../../store';
import type { AuthContext, TokenLookup } from '../auth/auth-context';
import { authenticateAccount } from '../auth/authenticate';

/** A stored token as a listing shows it (the store's `TokenSummary` satisfies it). */
export interface TokenSummaryRecord {
  id: string;
  kind: 'personal' | 'session' | 'browser';
  name: string;
  displayPrefix: string;
  scopes: readonly string[];
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** Port: the token store (`TokenRepository` satisfies it). */
export interface TokenStore extends TokenLookup {
  create(input: NewToken & { kind: 'personal' }): Promise<TokenSummaryRecord>;
  listForUser(userId: string, filter: { orgId?: string }): Promise<TokenSummaryRecord[]>;
  revoke(id: string, options: { userId?: string }): Promise<boolean>;
}

export interface TokenRouteDeps {
  tokens: TokenStore;
  bodyLimitBytes: number;
  now?: () => Date;
}

const DAY_MS = 86_400_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Minting and revoking tokens needs a signed-in person: the web editor's session or the CLI's
 * device-login session. A personal access token cannot mint more of itself, so a leaked one
 * cannot be used to hide behind new ones.
 */
const ACCOUNT_KINDS = ['browser', 'session'] as const;

function summaryBody(row: TokenSummaryRecord): TokenSummaryBody {
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

function authOf(res: Response): AuthContext {
  return res.locals.auth as AuthContext;
}

/**
 * Personal access tokens (the web editor's Settings, API tokens page and `svc` use these):
 * `GET /v1/tokens` lists the caller's live tokens in their organization, `POST /v1/tokens`
 * creates one and answers its value exactly once, `DELETE /v1/tokens/:id` revokes one; the
 * next request with it is refused. See docs/auth.md.
 */
export function createTokenRouter(deps: TokenRouteDeps): Router {
  const router = Router();
  const now = deps.now ?? (() => new Date());
  const json = express.json({ limit: deps.bodyLimitBytes, type: () => true, strict: true });

  router.get('/v1/tokens', (_req, res, next) => {
    res.locals.route = '/v1/tokens';
    next();
  }, authenticateAccount('GET /v1/tokens', deps.tokens), async (_req: Request, res: Response) => {
    const auth = authOf(res);
    const at = now().getTime();
    const rows = await deps.tokens.listForUser(auth.userId, { orgId: auth.orgId });
    // Revoked and expired tokens no longer act; listing them would only invite confusion.
    const live = rows.filter((row) => row.revokedAt === null && (row.expiresAt === null || row.expiresAt.getTime() > at));
    res.json({ tokens: live.map(summaryBody) } satisfies TokenListBody);
  });

  router.post('/v1/tokens', (_req, res, next) => {
    res.locals.route = '/v1/tokens';
    next();
  }, authenticateAccount('POST /v1/tokens', deps.tokens, { kinds: ACCOUNT_KINDS }), json, async (req: Request, res: Response) => {
    const auth = authOf(res);
    const checked = validate(TokenCreateInputSchema, req.body);
    if (!checked.ok) throw new AppError({ code: 'validation_failed', message: checked.message, details: { issues: checked.issues } });
    const input = checked.value;
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
    res.status(201).set('Cache-Control', 'no-store').json({ ...summaryBody(row), token: issued.value } satisfies TokenCreatedBody);
  });

  router.delete('/v1/tokens/:id', (_req, res, next) => {
    res.locals.route = '/v1/tokens/:id';
    next();
  }, authenticateAccount('DELETE /v1/tokens/:id', deps.tokens, { kinds: ACCOUNT_KINDS }), async (req: Request<{ id: string }>, res: Response) => {
    const auth = authOf(res);
    const { id } = req.params;
    const revoked = UUID.test(id) && (await deps.tokens.revoke(id, { userId: auth.userId }));
    if (!revoked) throw new AppError({ code: 'not_found', message: `you have no live token with id "${id}"; list them with GET /v1/tokens` });
    res.status(204).end();
  });

  return router;
}
