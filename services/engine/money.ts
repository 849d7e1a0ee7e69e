/**
 * Money inside the service is an integer number of micro-USD (1 USD = 1,000,000 micro-USD).
 * Numbers are safe integers up to 9,007,199,254 USD, far beyond any balance we hold, so plain
 * `number` is used (BigInt columns are converted at the store boundary).
 *
 * Rounding: USD amounts from callers (caps) are rounded DOWN to the micro-USD, so a cap is never
 * raised by rounding; computed prices (tokens × price) are rounded UP, so a charge never falls
 * short of the real cost. Amounts leave the service as USD numbers with at most 6 decimals.
 */
export type Micros = number & { readonly __brand?: 'micro-usd' };

export const MICROS_PER_USD = 1_000_000;

function assertSafe(micros: number, what: string): void {
  if (!Number.isSafeInteger(micros)) throw new RangeError(`${what} is not a safe integer number of micro-USD: ${micros}`);
}

/** Caller-given USD (a cap) to micro-USD, rounded down. */
export function usdToMicrosFloor(usd: number): Micros {
  if (!Number.isFinite(usd)) throw new RangeError(`not a finite USD amount: ${usd}`);
  // Work on the decimal text to avoid binary error (0.29 * 1e6 = 289999.99999999994).
  const micros = Math.floor(Number((usd * MICROS_PER_USD).toFixed(3)));
  assertSafe(micros, 'amount');
  return micros;
}

/**
 * A USD amount written as decimal text (`25`, `0.5`, `12.345678`) to micro-USD, exactly: digits
 * are read as text, never through a binary float, and more than 6 decimals is refused rather
 * than rounded. Signs, exponents and separators are refused too.
 */
export function parseUsdText(text: string): Micros {
  const match = /^(\d{1,15})(?:\.(\d{1,6}))?$/.exec(text.trim());
  if (!match) {
    throw new RangeError(`"${text}" is not a USD amount: write digits with at most 6 decimals and no sign or currency symbol, e.g. 25 or 12.50`);
  }
  const micros = Number(match[1]) * MICROS_PER_USD + Number((match[2] ?? '').padEnd(6, '0'));
  assertSafe(micros, 'amount');
  return micros;
}

/** A computed price in fractional micro-USD, rounded up to a whole micro-USD. */
export function ceilMicros(fractional: number): Micros {
  if (!Number.isFinite(fractional) || fractional < 0) throw new RangeError(`not a non-negative amount: ${fractional}`);
  const micros = Math.ceil(Number(fractional.toFixed(6)));
  assertSafe(micros, 'amount');
  return micros;
}

/** Micro-USD to a USD number for the API (exact to 6 decimals). */
export function microsToUsd(micros: Micros): number {
  assertSafe(micros, 'amount');
  return Number((micros / MICROS_PER_USD).toFixed(6));
}

/** Sum of amounts; refuses to lose precision. */
export function sumMicros(amounts: readonly Micros[]): Micros {
  let total = 0;
  for (const a of amounts) {
    total += a;
    assertSafe(total, 'sum');
  }
  return total;
}

/** The default spend cap and the per-run ceiling (SPEC: Limits). */
export const DEFAULT_CAP_MICROS: Micros = 500_000;
export const MAX_CAP_MICROS: Micros = 1_000_000;

/**
 * cap = min(maxCostUsd ?? 0.50, 1.00), in micro-USD. The ceiling is applied before converting:
 * a cap of 1e10 USD is a valid request (lowered to 1.00), not a number too big for micro-USD.
 */
export function effectiveCapMicros(maxCostUsd: number | undefined): Micros {
  if (maxCostUsd === undefined) return DEFAULT_CAP_MICROS;
  if (maxCostUsd >= MAX_CAP_MICROS / MICROS_PER_USD) return MAX_CAP_MICROS;
  return usdToMicrosFloor(maxCostUsd);
}

/**
 * An amount for people to read, exact to the micro-USD (money is exact; rounding to cents would
 * print 10.00 USD for 9.999051), with at least cents: 25.10, 0.002, 25.100001 USD.
 */
export function usdText(micros: Micros): string {
  const exact = String(microsToUsd(micros));
  const [whole, fraction = ''] = exact.split('.');
  return `${whole}.${fraction.padEnd(2, '0')} USD`;
}
