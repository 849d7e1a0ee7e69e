import { MAX_TOKEN_DAYS } from '../../../contract/schemas/token';

export { MAX_TOKEN_DAYS };

/** The expiry choices of the create form. */
export type ExpiryChoice = '7' | '30' | '90' | '365' | 'none' | 'custom';
export const EXPIRY_PRESETS: readonly { value: ExpiryChoice; label: string }[] = [
  { value: '7', label: '7 days' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: '365', label: '365 days' },
  { value: 'none', label: 'No expiry' },
  { value: 'custom', label: 'Custom date…' },
];

const DAY = 24 * 3600_000;

/** `YYYY-MM-DD` of a local date. */
export function isoDay(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

/** Local midnight of a `YYYY-MM-DD`, or null when it is not a date. */
function parseDay(text: string): Date | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return null;
  const date = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return date.getMonth() === Number(m[2]) - 1 ? date : null;
}

/** The first and last dates a custom expiry may take (tomorrow to 365 days from today). */
export function customDateBounds(now: Date): { min: string; max: string } {
  const today = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  return {
    min: isoDay(new Date(today.getFullYear(), today.getMonth(), today.getDate() + 1)),
    max: isoDay(new Date(today.getFullYear(), today.getMonth(), today.getDate() + MAX_TOKEN_DAYS)),
  };
}

export type ExpiryResult = { ok: true; expiresInDays: number | undefined } | { ok: false; message: string };

/**
 * The `expiresInDays` to send for a choice (docs/auth.md: 1 to 365, omitted for no expiry). A
 * custom date counts whole days from today; it must lie between tomorrow and 365 days ahead.
 */
export function expiryDays(choice: ExpiryChoice, customDate: string, now: Date): ExpiryResult {
  if (choice === 'none') return { ok: true, expiresInDays: undefined };
  if (choice !== 'custom') return { ok: true, expiresInDays: Number(choice) };
  const date = parseDay(customDate);
  if (!date) return { ok: false, message: 'Pick the date the token expires.' };
  const today = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  const days = Math.round((date.getTime() - today.getTime()) / DAY);
  if (days < 1) return { ok: false, message: 'The expiry date must be after today.' };
  if (days > MAX_TOKEN_DAYS) return { ok: false, message: `A token lasts at most ${MAX_TOKEN_DAYS} days: pick a date no later than ${customDateBounds(now).max}.` };
  return { ok: true, expiresInDays: days };
}

/** When a token created now with this lifetime expires (the server counts from its own clock). */
export function expiryDate(expiresInDays: number | undefined, now: Date): Date | null {
  return expiresInDays === undefined ? null : new Date(now.getTime() + expiresInDays * DAY);
}
