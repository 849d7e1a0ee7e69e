import type { NextFunction, Request, Response } from 'express';
import type { Operation, Scope } from '../../contract';
import { parseToken } from '../../platform/access-token';
import { AppError } from '../../platform/app-error';
import type { AuthContext, TokenLookup, TokenRecord } from './auth-context';

const SHAPE_PROBLEMS = {
  unknown_prefix: 'it does not start with a known token prefix (svc_ or svcs_)',
  bad_length: 'it has the wrong length (was it cut off when copied?)',
  bad_checksum: 'its checksum does not match (was it mistyped?)',
} as const;

function unauthorized(message: string): AppError {
  return new AppError({ code: 'unauthorized', message });
}

function isScope(value: string): value is Scope {
  return value === 'read' || value === 'run';
}

/** Checks a bearer token and returns who it acts for; every failure names its reason. */
export async function authenticateBearer(header: string, tokens: TokenLookup, now: Date): Promise<AuthContext> {
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (!match) throw unauthorized('the Authorization header must have the form "Bearer <access token>"');
  const parsed = parseToken(match[1]!);
  if (!parsed.ok) throw unauthorized(`the access token is malformed: ${SHAPE_PROBLEMS[parsed.problem]}`);
  const record: TokenRecord | null = await tokens.findByHash(parsed.hash);
  if (!record) throw unauthorized(`the access token ${parsed.displayPrefix}… is not known; create a new one in the web editor under Settings, API tokens`);
  if (record.revokedAt) throw unauthorized(`the access token ${parsed.displayPrefix}… was revoked at ${record.revokedAt.toISOString()}`);
  if (record.expiresAt && record.expiresAt.getTime() <= now.getTime()) {
    throw unauthorized(`the access token ${parsed.displayPrefix}… expired at ${record.expiresAt.toISOString()}`);
  }
  return { tokenId: record.id, userId: record.userId, orgId: record.orgId, scopes: record.scopes.filter(isScope), kind: record.kind };
}

/**
 * Express middleware for one operation: sets `res.locals.auth`. Operations with `auth: 'optional'`
 * (the node catalog) work without a token, but a token that is sent must still be valid.
 */
export function authenticateFor(op: Operation, tokens: TokenLookup, clock: () => Date = () => new Date()) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const header = req.get('authorization');
    if (!header) {
      if (op.auth === 'optional') {
        res.locals.auth = null;
        return next();
      }
      res.set('WWW-Authenticate', 'Bearer');
      throw unauthorized(`${op.name} needs an access token: send the header "Authorization: Bearer <token>"`);
    }
    let auth: AuthContext;
    try {
      auth = await authenticateBearer(header, tokens, clock());
    } catch (err) {
      res.set('WWW-Authenticate', 'Bearer error="invalid_token"');
      throw err;
    }
    if (op.auth === 'required' && !auth.scopes.includes(op.scope)) {
      throw new AppError({
        code: 'insufficient_scope',
        message: `this token lacks the "${op.scope}" scope that ${op.name} needs; it has: ${auth.scopes.join(', ') || 'no scopes'}. Create a token with the "${op.scope}" scope`,
      });
    }
    res.locals.auth = auth;
    next();
  };
}
