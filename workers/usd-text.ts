import { microsToUsd, type Micros } from '../services/engine/money';

/**
 * An amount for people to read, exact to the micro-USD (money is exact; rounding to cents would
 * print 10.00 USD for 9.999051), with at least cents: 25.10, 0.002, 25.100001 USD.
 */
export function usdText(micros: Micros): string {
  const exact = String(microsToUsd(micros));
  const [whole, fraction = ''] = exact.split('.');
  return `${whole}.${fraction.padEnd(2, '0')} USD`;
}
