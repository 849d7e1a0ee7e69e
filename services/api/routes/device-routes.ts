import type { Router } from 'express';
import { deviceOAuthRouter } from './device-oauth-routes';
import type { DeviceRouteDeps } from '../handlers/device-ports';

export type { DeviceRouteDeps } from '../handlers/device-ports';
export { DEVICE_GRANT_TYPE } from './device-oauth-routes';

/**
 * The device's side of device login for the CLI, the OAuth 2.0 Device Authorization Grant
 * (RFC 8628; docs/auth.md, "Device login (svc login)"), in RFC 8628's own formats:
 *
 * - `POST /oauth/device/code`: a device code for the client and a user code for the person;
 * - `POST /oauth/token` (device-code grant): polled until the person decides, then a session
 *   token (`svcs_…`, expiring, revocable), once.
 *
 * The approving person's side (`device.lookup`, `device.approve`, `device.deny`) is declared in
 * the contract's route registry like every other JSON route.
 */
export function createDeviceRouter(deps: DeviceRouteDeps): Router {
  return deviceOAuthRouter(deps);
}
