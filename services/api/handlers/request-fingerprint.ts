import { createHash } from 'node:crypto';
import stringify from 'safe-stable-stringify';
import type { CallOptionValues } from '../../contract';

/**
 * The hash an idempotency key is stored with (docs/runs.md, Idempotent run creation): SHA-256 of
 * the call's name, its validated input and its call options but the key itself, as JSON with
 * sorted keys, so the same request hashes the same whatever order its fields were sent in, and
 * the same key sent to another operation, or with another deadline, is another request.
 */
export function requestFingerprint(call: string, input: unknown, options: CallOptionValues | undefined): string {
  const { idempotencyKey: _key, ...rest } = options ?? {};
  return createHash('sha256').update(stringify({ call, input, options: rest }) ?? '').digest('hex');
}
