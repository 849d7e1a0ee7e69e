import type { Parsed } from './semver';

/** Longest email address (RFC 5321: 64-character local part, `@`, 255-character domain). */
export const MAX_EMAIL_LENGTH = 320;
/** Longest display name of a user or an organization. */
export const MAX_DISPLAY_NAME_LENGTH = 200;

/**
 * An email address as an account key: trimmed and lower-cased, one `@` with text on both sides,
 * no spaces or control characters. Deliverability is not checked (no mail is sent).
 */
export function checkEmail(email: string): Parsed<string> {
  const normalized = email.trim().toLowerCase();
  // eslint-disable-next-line no-control-regex
  if (normalized.length > MAX_EMAIL_LENGTH || !/^[^\s@\u0000-\u001f]+@[^\s@\u0000-\u001f]+$/.test(normalized)) {
    return { ok: false, message: `"${email.slice(0, 80)}" is not an email address (name@domain, at most ${MAX_EMAIL_LENGTH} characters)` };
  }
  return { ok: true, value: normalized };
}

/** A display name: not blank, at most {@link MAX_DISPLAY_NAME_LENGTH} characters, no control characters. */
export function checkDisplayName(name: string, what: string): Parsed<string> {
  const trimmed = name.trim();
  // eslint-disable-next-line no-control-regex
  if (trimmed === '' || trimmed.length > MAX_DISPLAY_NAME_LENGTH || /[\u0000-\u001f\u007f]/.test(trimmed)) {
    return { ok: false, message: `${what} must be 1 to ${MAX_DISPLAY_NAME_LENGTH} characters of text without control characters` };
  }
  return { ok: true, value: trimmed };
}
