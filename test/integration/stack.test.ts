import fs from 'node:fs';
import { Redis } from 'ioredis';
import { Client } from 'minio';
import pg from 'pg';
import { stack, uniqueName } from '../support/stack';

describe('the throwaway test stack', () => {
  it('has a Redis that answers PING and will not evict queue data', async () => {
    const redis = new Redis(stack().redisUrl);
    try {
      expect(await redis.ping()).toBe('PONG');
      expect(await redis.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    } finally {
      redis.disconnect();
    }
  });

  it('has a Postgres that answers SELECT 1 and holds the migrated template', async () => {
    const { host, port, user } = stack().postgres;
    const client = new pg.Client({ host, port, user, database: 'postgres' });
    await client.connect();
    try {
      expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      const template = await client.query('SELECT datistemplate FROM pg_database WHERE datname = $1', [stack().templateDatabase]);
      expect(template.rows).toEqual([{ datistemplate: true }]);
    } finally {
      await client.end();
    }
  });

  it('has an S3 server that lists the test bucket and checks signatures', async () => {
    const { host, port, useSSL, accessKey, secretKey, region, bucket } = stack().s3;
    const client = new Client({ endPoint: host, port, useSSL, accessKey, secretKey, region });
    expect((await client.listBuckets()).map((b) => b.name)).toContain(bucket);
    const prefix = `${uniqueName('smoke')}/`;
    await client.putObject(bucket, `${prefix}hello.txt`, Buffer.from('hi'), 2, { 'Content-Type': 'text/plain' });
    const names: string[] = [];
    for await (const item of client.listObjectsV2(bucket, prefix, true)) names.push((item as { name: string }).name);
    expect(names).toEqual([`${prefix}hello.txt`]);
    const wrong = new Client({ endPoint: host, port, useSSL, accessKey, secretKey: 'not-the-secret', region });
    await expect(wrong.listBuckets()).rejects.toMatchObject({ code: 'SignatureDoesNotMatch' });
  });

  it('gives each run a temporary directory and names no two callers alike', () => {
    expect(fs.statSync(stack().tmpDir).isDirectory()).toBe(true);
    const names = new Set(Array.from({ length: 100 }, () => uniqueName('Queue Name!')));
    expect(names.size).toBe(100);
    for (const name of names) expect(name).toMatch(/^queue-name-[a-z0-9-]+$/);
    expect(uniqueName('x'.repeat(200)).length).toBeLessThanOrEqual(63);
  });
});
