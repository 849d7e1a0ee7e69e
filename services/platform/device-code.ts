import { createHash, randomBytes, randomInt } from 'node:crypto';

/**
 * The two codes of the OAuth 2.0 device authorization grant (RFC 8628):
 *
 * - the device code: 32 random bytes, base64url (43 characters); only the CLI sees it and polls
 *   with it; unguessable, so it needs no rate limit of its own;
 * - the user code: 8 characters from an alphabet of 20 consonants (no vowels, so no words; no
 *   digits, so nothing to confuse with letters; RFC 8628 §6.1), shown as `XXXX-XXXX` and typed
 *   by a person. About 34.6 bits: guessing is limited by rate limits and its short lifetime.
 *
 * Only the SHA-256 of each is stored.
 */

/** RFC 8628 §6.1's example alphabet: consonants only (no vowels, no lookalike digits). */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;

export interface IssuedDeviceCodes {
  deviceCode: string;
  deviceCodeHash: string;
  /** Display form, `XXXX-XXXX`. */
  userCode: string;
  userCodeHash: string;
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** SHA-256 hex of a device code as the client sent it. */
export function hashDeviceCode(deviceCode: string): string {
  return sha256(deviceCode);
}

/** SHA-256 hex of a normalized user code (see {@link normalizeUserCode}). */
export function hashUserCode(normalized: string): string {
  return sha256(normalized);
}

/** `BCDFGHJK` → `BCDF-GHJK`. */
export function formatUserCode(normalized: string): string {
  return `${normalized.slice(0, 4)}-${normalized.slice(4)}`;
}

/**
 * A user code as typed: upper-cased, dashes and white space removed. Null when the result is not
 * 8 characters of the alphabet (so it cannot be a code we issued).
 */
export function normalizeUserCode(typed: string): string | null {
  const normalized = typed.toUpperCase().replace(/[\s-]+/g, '');
  if (normalized.length !== USER_CODE_LENGTH) return null;
  for (const ch of normalized) if (!USER_CODE_ALPHABET.includes(ch)) return null;
  return normalized;
}

/** A new device code and user code from the system's cryptographic random source. */
export function issueDeviceCodes(): IssuedDeviceCodes {
  const deviceCode = randomBytes(32).toString('base64url');
  let normalized = '';
  // randomInt draws without modulo bias.
  for (let i = 0; i < USER_CODE_LENGTH; i++) normalized += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return { deviceCode, deviceCodeHash: hashDeviceCode(deviceCode), userCode: formatUserCode(normalized), userCodeHash: hashUserCode(normalized) };
}
