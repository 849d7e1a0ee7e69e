/** USD to the micro-dollar, the unit the service counts in. */
export const usd = (amount: number): string => `$${amount.toFixed(6)}`;

/** A sum of USD amounts without floating-point crumbs (amounts are whole micro-dollars). */
export const addUsd = (a: number, b: number): number => Math.round((a + b) * 1e6) / 1e6;

export function duration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}
