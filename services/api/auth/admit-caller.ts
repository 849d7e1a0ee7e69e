import type { Scope, TokenKind } from '../../contract';
import { AppError } from '../../platform/app-error';
import type { AuthContext } from './auth-context';

/** What one operation or route demands of its caller. */
export interface Requirement {
  /** Named in messages: the operation (`runs.create`) or route (`GET /v1/runs/:id`). */
  what: string;
  /** The scope the caller needs; null: any authenticated caller (account routes such as `GET /v1/me`). */
  scope: Scope | null;
  /** Credential kinds allowed (default all). */
  kinds?: readonly TokenKind[];
  /** true: works without a token (the node catalog); the scope is not checked. */
  optional: boolean;
}

const KIND_NAMES: Record<TokenKind, string> = {
  personal: 'personal access token',
  session: 'device-login session token (svc login)',
  browser: 'web editor session',
  oauth: 'MCP client access token (OAuth)',
};

/** Refuses an authenticated caller whose credential kind or scope the requirement excludes. */
export function admitCaller(requirement: Requirement, auth: AuthContext): void {
  const { what, scope, kinds, optional } = requirement;
  if (kinds && !kinds.includes(auth.kind)) {
    throw new AppError({ code: 'forbidden', message: `${what} cannot be called with a ${KIND_NAMES[auth.kind]}; use ${kinds.map((k) => `a ${KIND_NAMES[k]}`).join(' or ')}` });
  }
  if (!optional && scope !== null && !auth.scopes.includes(scope)) {
    throw new AppError({
      code: 'insufficient_scope',
      message: `this token lacks the "${scope}" scope that ${what} needs; it has: ${auth.scopes.join(', ') || 'no scopes'}. Create a token with the "${scope}" scope`,
    });
  }
}
