import { createDatabase, queryRows, type Database } from '../../services/store';
import { createTestDatabase, terminateConnections, type TestDatabase } from '../support/database';
import { stack } from '../support/stack';

/**
 * The pool under the store: `queryRows` uses it before (or without) Prisma ever connecting, as a
 * worker process does, so the pool itself must survive the server closing its idle connections.
 */
describe('the Postgres pool shared by Prisma and plain statements', () => {
  let db: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    db = await createTestDatabase(stack().postgres);
    database = createDatabase(db.url, { poolSize: 3 });
  });

  afterAll(async () => {
    await database?.close();
    await db?.drop();
  });

  it('replaces idle connections the server closed, and answers the next statement', async () => {
    // Three connections opened and left idle by plain statements only (Prisma itself never connects).
    await Promise.all([1, 2, 3].map(() => queryRows(database.pool, 'SELECT pg_sleep(0.05)', [])));
    // The closings reach the idle clients asynchronously (each backend tells its client, then
    // exits: terminateConnections waits for that); an unhandled one would crash the process here.
    await terminateConnections(stack().postgres, db.name);
    await expect(queryRows<{ one: number }>(database.pool, 'SELECT 1 AS one', [])).resolves.toEqual([{ one: 1 }]);
  });
});
