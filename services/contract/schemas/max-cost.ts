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

/**
 * What the run tools tell an agent about money (the spend cap of SPEC Limits; engine/money.ts
 * holds the same two numbers, and a unit test keeps them equal).
 */
export const SPEND_CAP_NOTE =
  "Costs money: it spends the organization's balance on every node it runs. maxCostUsd caps this run's spend: 0.50 USD when omitted, at most 1.00 USD (larger caps are lowered to 1.00); a run that would exceed its cap fails with spend_cap_exceeded instead of overspending. Needs a token with scope run.";
