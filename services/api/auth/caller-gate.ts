import type { Response } from 'express';
import type { AuthContext } from './auth-context';

/**
 * A check every authenticated caller passes before its route runs (the per-token rate limit).
 * An app-level middleware installs it on the response; the authentication middleware calls it
 * once it knows the caller, so every router that authenticates gets it without wiring it in.
 * It throws (an `AppError`) to refuse the request.
 */
export type CallerGate = (auth: AuthContext, res: Response) => Promise<void>;

const GATE = Symbol('callerGate');

interface GatedLocals {
  [GATE]?: CallerGate;
}

/** Installs the gate for this request (the rate-limit middleware does). */
export function setCallerGate(res: Response, gate: CallerGate): void {
  (res.locals as GatedLocals)[GATE] = gate;
}

/** Passes the caller through the request's gate, if one was installed. */
export async function passCallerGate(auth: AuthContext, res: Response): Promise<void> {
  const gate = (res.locals as GatedLocals)[GATE];
  if (gate) await gate(auth, res);
}
