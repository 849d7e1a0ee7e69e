import { Router } from 'express';
import { deviceApprovalRouter } from './device-approval-routes';
import type { DeviceRouteDeps } from './device-ports';
import { deviceOAuthRouter } from './device-oauth-routes';

export type { DeviceRouteDeps } from './device-ports';
export { DEVICE_GRANT_TYPE } from './device-oauth-routes';

/**
 * Device login for the CLI, the OAuth 2.0 Device Authorization Grant (RFC 8628; docs/auth.md,
 * "Device login (svc login)"):
 *
 * - `POST /oauth/device/code`: a device code for the client and a user code for the person;
 * - `POST /oauth/token` (device-code grant): polled until the person decides, then a session
 *   token (`svcs_…`, expiring, revocable), once;
 * - `GET /oauth/device/lookup`, `POST /oauth/device/approve`, `POST /oauth/device/deny`: the
 *   approving person's side, for the web editor's `/device` page.
 */
export function createDeviceRouter(deps: DeviceRouteDeps): Router {
  const router = Router();
  router.use(deviceOAuthRouter(deps));
  router.use(deviceApprovalRouter(deps));
  return router;
}
