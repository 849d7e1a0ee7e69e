import net from 'node:net';
import { createDatabase, type Database } from '../../services/store/database';
import { isDatabaseUnavailable } from '../../services/store/store-outage';
import { databaseUrl } from '../support/database';
import { stack } from '../support/stack';

/**
 * The pool's timeouts (DATABASE_CONNECT_TIMEOUT_MS, DATABASE_QUERY_TIMEOUT_MS): a request never
 * waits for Postgres without bound. Fault suite R4 measured a 503 that took 14.5 s while every
 * pooled connection was busy with a restarting server; each wait here ends in an error that the
 * HTTP layer answers 503 with Retry-After.
 */

const failureOf = (promise: Promise<unknown>): Promise<unknown> => promise.then(
  () => undefined,
  (err: unknown) => err,
);

/** A TCP server that accepts connections and never says a byte: a Postgres behind a blackhole. */
async function silentServer(): Promise<{ port: number; close(): void }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

describe('the Postgres pool', () => {
  const opened: Database[] = [];
  const open = (url: string, options: Parameters<typeof createDatabase>[1]): Database => {
    const db = createDatabase(url, options);
    opened.push(db);
    return db;
  };
  afterAll(async () => {
    await Promise.all(opened.map((db) => db.close().catch(() => undefined)));
  });

  it('gives up opening a connection to a server that never answers after the connect timeout', async () => {
    const server = await silentServer();
    try {
      const db = open(`postgres://x@127.0.0.1:${server.port}/x`, { connectTimeoutMs: 300 });
      // The server never answers, so only the connect timeout can end the query (without it, the
      // test's own timeout would); no clock is read.
      const err = await failureOf(db.pool.query('SELECT 1'));
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/timeout/);
      expect(isDatabaseUnavailable(err)).toBe(true);
      // Prisma over the same pool fails the same way.
      expect(isDatabaseUnavailable(await failureOf(db.prisma.$queryRawUnsafe('SELECT 1')))).toBe(true);
    } finally {
      server.close();
    }
  });

  it('gives up waiting for a connection of a pool whose every connection is busy', async () => {
    const db = open(databaseUrl(stack().postgres, 'postgres'), { poolSize: 1, connectTimeoutMs: 300, queryTimeoutMs: 20_000 });
    const busy = db.pool.query('SELECT pg_sleep(3)');
    const err = await failureOf(db.pool.query('SELECT 1'));
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe('timeout exceeded when trying to connect');
    expect(isDatabaseUnavailable(err)).toBe(true);
    await busy;
    // The pool still works once its connection is free again.
    expect((await db.pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('gives up on a statement that gets no answer, and drops that connection instead of reusing it', async () => {
    const db = open(databaseUrl(stack().postgres, 'postgres'), { poolSize: 2, queryTimeoutMs: 300 });
    const { rows } = await db.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const err = await failureOf(db.pool.query('SELECT pg_sleep(5)'));
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe('Query read timeout');
    expect(isDatabaseUnavailable(err)).toBe(true);
    // The next statement runs on a fresh connection, not behind the one still waiting for pg_sleep.
    const next = await db.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    expect(next.rows[0]!.pid).not.toBe(rows[0]!.pid);
  });
});
