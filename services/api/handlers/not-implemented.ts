import type { OpName } from '../../contract';
import { AppError } from '../../platform/app-error';

/** Handler of an operation whose implementation has not landed yet: 501 with a JSON error. */
export function notImplemented(op: OpName) {
  return async (): Promise<never> => {
    throw new AppError({ code: 'not_implemented', message: `${op} is not implemented by this server yet` });
  };
}
