/**
 * Money as people read it: dollars with cents, and the fractions of a cent the service counts
 * (micro-USD) where there are any, never rounded up ($9.99856 is not shown as $10.00).
 */
export function formatUsd(amount: number): string {
  const sign = amount < 0 ? '-' : '';
  const micros = Math.round(Math.abs(amount) * 1_000_000);
  const dollars = Math.floor(micros / 1_000_000);
  const fraction = String(micros % 1_000_000).padStart(6, '0').replace(/0+$/, '').padEnd(2, '0');
  return `${sign}$${dollars.toLocaleString('en-US')}.${fraction}`;
}

/** A duration in milliseconds, short. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** A time as a local date and time; the full ISO value goes in the element's title. */
export function formatTime(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}
