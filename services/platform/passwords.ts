import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Password hashing for the web editor's sign-in: scrypt from node:crypto in a self-describing
 * format `scrypt$<N>$<r>$<p>$<salt base64>$<hash base64>`, so the parameters can be raised later
 * while hashes made with older ones still verify.
 */

/** Shortest password accepted when one is set. */
export const MIN_PASSWORD_LENGTH = 10;
/** Longest password accepted (scrypt reads the whole of it; a bound keeps sign-in cheap to refuse). */
export const MAX_PASSWORD_LENGTH = 1024;

/** Cost parameters: N = 2^15, r = 8, p = 1 (OWASP's recommendation for scrypt), 32 MiB of memory. */
export const SCRYPT_PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;

const SALT_BYTES = 16;
const HASH_BYTES = 32;
const FORMAT = /^scrypt\$(\d{1,8})\$(\d{1,3})\$(\d{1,3})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

function derive(password: string, salt: Buffer, length: number, params: { N: number; r: number; p: number }): Promise<Buffer> {
  // scrypt needs 128 * N * r bytes; node's default maxmem (32 MiB) is just short of N = 2^15, r = 8.
  const options: ScryptOptions = { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, length, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** Why a password cannot be set, or null when it can. */
export function passwordProblem(password: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `the password must be at least ${MIN_PASSWORD_LENGTH} characters long`;
  if (password.length > MAX_PASSWORD_LENGTH) return `the password must be at most ${MAX_PASSWORD_LENGTH} characters long`;
  return null;
}

/** Hashes a new password (length checked: a RangeError names the problem). */
export async function hashPassword(password: string, params: { N: number; r: number; p: number } = SCRYPT_PARAMS): Promise<string> {
  const problem = passwordProblem(password);
  if (problem) throw new RangeError(problem);
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, HASH_BYTES, params);
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/**
 * Whether `password` matches a stored hash, compared in constant time. A stored value that is not
 * of this format (or has absurd parameters) never matches; a password longer than the maximum
 * never matches either, without being hashed.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const match = FORMAT.exec(stored);
  if (!match) return false;
  const [N, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  // Bounds: a corrupted or hostile row must not make a sign-in allocate gigabytes.
  if (N < 2 || N > 2 ** 20 || (N & (N - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return false;
  const expected = Buffer.from(match[5]!, 'base64');
  if (expected.length < 16) return false;
  if (password.length > MAX_PASSWORD_LENGTH) return false;
  const actual = await derive(password, Buffer.from(match[4]!, 'base64'), expected.length, { N, r, p });
  return timingSafeEqual(actual, expected);
}

let dummy: Promise<string> | undefined;

/**
 * A hash of a random password with the current parameters: sign-in verifies against it when the
 * email is unknown (or the user has no password), so both answers take the same time.
 */
export function dummyPasswordHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(24).toString('base64'));
  return dummy;
}
