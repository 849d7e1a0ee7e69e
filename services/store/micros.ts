/**
 * Money crosses the store boundary here: Postgres keeps micro-USD in BIGINT columns, the rest of
 * the service uses plain `number` (safe to 9 billion USD). Every amount read from the database
 * goes through {@link microsFromDb}, whichever way it was read (Prisma gives bigint, node-postgres
 * decimal text, a jsonb result a JSON number); converting refuses to lose precision.
 */

/** A micro-USD amount from the database as a number. */
export function microsFromDb(value: bigint | string | number): number {
  const n = typeof value === 'number' ? value : Number(typeof value === 'string' ? BigInt(value) : value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`micro-USD amount ${String(value)} does not fit a safe integer`);
  return n;
}

/** A micro-USD number for a BIGINT column. */
export function microsToDb(value: number): bigint {
  if (!Number.isSafeInteger(value)) throw new RangeError(`micro-USD amount must be a safe integer, got ${value}`);
  return BigInt(value);
}
