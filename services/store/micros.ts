/**
 * Money crosses the store boundary here: Postgres keeps micro-USD in BIGINT columns, the rest of
 * the service uses plain `number` (safe to 9 billion USD). Converting refuses to lose precision.
 */

/** A BIGINT micro-USD value from the database as a number. */
export function microsFromDb(value: bigint): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`micro-USD amount ${value} does not fit a safe integer`);
  return n;
}

/** A micro-USD number for a BIGINT column. */
export function microsToDb(value: number): bigint {
  if (!Number.isSafeInteger(value)) throw new RangeError(`micro-USD amount must be a safe integer, got ${value}`);
  return BigInt(value);
}
