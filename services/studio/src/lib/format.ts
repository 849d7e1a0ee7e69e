/** Money as people read it: dollars with cents, and fractions of a cent where they matter. */
export function formatUsd(amount: number): string {
  if (amount !== 0 && Math.abs(amount) < 0.01) return `$${amount.toFixed(6).replace(/0+$/, '')}`;
  return `$${amount.toFixed(2)}`;
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
