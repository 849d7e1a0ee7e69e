import { durationLine, usdLine } from '../../sdk/src/index';

/** USD to the micro-dollar, the unit the service counts in. */
export const usd = usdLine;

/** An amount a person chose (a cap): `$0.25`, `$0.000001`, without trailing zeros past the cents. */
export const usdBrief = (amount: number): string => `$${amount.toFixed(6).replace(/0{1,4}$/, '')}`;

/** A sum of USD amounts without floating-point crumbs (amounts are whole micro-dollars). */
export const addUsd = (a: number, b: number): number => Math.round((a + b) * 1e6) / 1e6;

export const duration = durationLine;
