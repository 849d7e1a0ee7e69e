import net from 'node:net';
import pg from 'pg';
import { isDatabaseUnavailable } from '../../services/store/store-outage';

/**
 * Fault suite R4 found it: with Postgres dead behind something that accepts the TCP connection
 * (a pooler, a proxy, a load balancer), node-postgres fails with "Connection terminated
 * unexpectedly", an error without a code, and requests answered 500 instead of 503 with
 * Retry-After.
 */

/** A server that accepts each connection and closes it at once, as a proxy in front of a dead Postgres does. */
async function acceptAndClose(): Promise<net.Server> {
  const server = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

it('counts a connection node-postgres lost before Postgres spoke as an outage', async () => {
  const server = await acceptAndClose();
  const pool = new pg.Pool({ host: '127.0.0.1', port: (server.address() as net.AddressInfo).port, user: 'x', database: 'x', max: 1 });
  try {
    const err = await pool.query('SELECT 1').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect((err as { code?: unknown }).code).toBeUndefined();
    expect(isDatabaseUnavailable(err)).toBe(true);
    // Wrapped by a caller, it is still found along the cause chain.
    expect(isDatabaseUnavailable(new Error('token lookup failed', { cause: err }))).toBe(true);
  } finally {
    await pool.end();
    server.close();
  }
});

it('does not count a statement error, or an error whose text merely looks alike but has a code', () => {
  expect(isDatabaseUnavailable(Object.assign(new Error('syntax error at or near "SELEC"'), { code: '42601' }))).toBe(false);
  expect(isDatabaseUnavailable(Object.assign(new Error('Connection terminated unexpectedly'), { code: 'E_APP' }))).toBe(false);
  expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly!'))).toBe(false);
  expect(isDatabaseUnavailable(Object.assign(new Error('down'), { code: '57P01' }))).toBe(true);
});

it('counts a transaction Postgres rolled back for the moment (deadlock, serialization failure, lock timeout) as unavailable, retryable', () => {
  for (const code of ['40P01', '40001', '55P03']) expect(isDatabaseUnavailable(Object.assign(new Error('deadlock detected'), { code }))).toBe(true);
  // A constraint the statement broke is the request's fault or ours, not the moment's.
  expect(isDatabaseUnavailable(Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }))).toBe(false);
});
