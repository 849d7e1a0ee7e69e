import { Type } from '@sinclair/typebox';

/**
 * A run's requested spend cap in USD. Caps are held in whole micro-USD, rounded down, so the
 * smallest useful cap is one micro-USD; anything above the 1.00 ceiling is lowered to it
 * (SPEC: Limits), however large.
 */
export const MaxCostUsdSchema = Type.Number({
  minimum: 0.000001,
  description: 'spend cap in USD: at least 0.000001, one micro-USD, the smallest cap; default 0.50; larger caps are lowered to 1.00',
});
