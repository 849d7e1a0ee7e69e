import { Redis } from 'ioredis';
import pg from 'pg';
import { S3BlobStore } from '../../services/blobs';
import { stack } from '../support/stack';

describe('the throwaway test stack', () => {
  it('has a Redis that answers PING', async () => {
    const redis = new Redis(stack().redisUrl);
    expect(await redis.ping()).toBe('PONG');
    expect(await redis.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    redis.disconnect();
  });

  it('has a Postgres that answers SELECT 1 and holds the migrated template', async () => {
    const { host, port, user } = stack().postgres;
    const client = new pg.Client({ host, port, user, database: 'postgres' });
    await client.connect();
    expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    const templates = await client.query('SELECT datname FROM pg_database WHERE datname = $1', [stack().templateDatabase]);
    expect(templates.rowCount).toBe(1);
    await client.end();
  });

  it('has an S3 server that checks signatures', async () => {
    const store = new S3BlobStore({ ...stack().s3, bucket: 'svc-stack-smoke' });
    await store.init();
    expect(await store.stat('nothing-here')).toBeNull();
    const wrong = new S3BlobStore({ ...stack().s3, secretKey: 'not-the-secret', bucket: 'svc-stack-smoke' });
    await expect(wrong.stat('nothing-here')).rejects.toThrow(/credentials|signature/i);
  });
});
