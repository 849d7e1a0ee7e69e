import { Router, type Request, type Response } from 'express';
import { AppError } from '../../platform/app-error';
import type { AuthContext } from '../auth/auth-context';
import { authenticateAccount } from '../auth/authenticate';
import type { DeviceRouteDeps } from './device-ports';
import { allowOnly, routeLabel } from './route-marks';

/** What `GET /v1/me` reads. */
export type MeRouteDeps = Pick<DeviceRouteDeps, 'users' | 'organizations' | 'tokens' | 'clock'>;

/**
 * `GET /v1/me` (for `svc whoami`): who the caller is, for which organization, and with what
 * credential. Any valid caller: a personal access token, a device-login session, the editor's cookie.
 */
export function createMeRouter(deps: MeRouteDeps): Router {
  const router = Router();
  router.get('/v1/me', routeLabel('/v1/me'), authenticateAccount('GET /v1/me', deps.tokens, { clock: deps.clock }), async (_req: Request, res: Response) => {
    const auth = res.locals.auth as AuthContext;
    const [user, organization, token] = await Promise.all([deps.users.findById(auth.userId), deps.organizations.findById(auth.orgId), deps.tokens.findById(auth.tokenId)]);
    // The rows cascade with their user and organization: a token that authenticated has both.
    if (!user || !organization || !token) throw new AppError({ code: 'unauthorized', message: 'the account of this token no longer exists' });
    res.set('Cache-Control', 'no-store');
    res.status(200).json({
      user: { id: user.id, email: user.email, name: user.name },
      organization: { id: organization.id, slug: organization.slug, name: organization.name },
      token: { id: token.id, kind: token.kind, name: token.name, displayPrefix: token.displayPrefix, scopes: auth.scopes, expiresAt: token.expiresAt?.toISOString() ?? null },
    });
  });
  allowOnly(router, '/v1/me', ['GET']);
  return router;
}
