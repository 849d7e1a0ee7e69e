import { ceilMicros, type Micros } from '../engine';
import type { NodeDefinition } from './node-definition';

/**
 * Prices of the local nodes. They run on our own CPUs, so they cost little, but never nothing:
 * spend caps and the ledger are exercised end to end by every workflow, including those built
 * only from local nodes.
 */
export type Pricing = Pick<NodeDefinition, 'estimate' | 'price'>;

/** The same fixed amount before and after running (text, JSON and math nodes: 1–10 micro-USD). */
export function flatPricing(micros: Micros): Pricing {
  return { estimate: () => micros, price: () => micros };
}

/** Image operations: a base amount plus an amount per output megapixel, up to a ceiling. */
export const IMAGE_BASE_MICROS: Micros = 100;
export const IMAGE_MICROS_PER_MEGAPIXEL: Micros = 100;
export const IMAGE_MAX_MICROS: Micros = 500;

/** The price of producing an image of `pixels` pixels: 100 + 100 per megapixel (rounded up), at most 500. */
export function imagePriceMicros(pixels: number): Micros {
  // Unknown or absurd sizes (NaN, negative) cost the ceiling: never under-charge.
  if (!Number.isFinite(pixels) || pixels < 0) return IMAGE_MAX_MICROS;
  return Math.min(IMAGE_MAX_MICROS, IMAGE_BASE_MICROS + ceilMicros((pixels * IMAGE_MICROS_PER_MEGAPIXEL) / 1_000_000));
}
