import path from 'node:path';
import pino from 'pino';
import { BlobUrlSigner, FsBlobStore, S3BlobStore, type BlobStore } from '../../services/blobs';
import { BlobArtifactStore } from '../../services/nodes';
import { ArtifactRepository, createDatabase, RunRepository, type Database, type PrismaClient } from '../../services/store';
import { createRetentionSweeper, type RetentionSweeperOptions } from '../../services/runs/sweeps/retention-sweeper';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { seedAccount } from '../support/fixtures';
import { stack, uniqueName } from '../support/stack';

const BASE = 'http://svc.test';
const DAY = 86_400;
const RETENTION = 30 * DAY;
const signer = new BlobUrlSigner({ publicBaseUrl: BASE, secret: 's'.repeat(40) });
const silent = pino({ level: 'silent' });
/** Half a second past a whole second: expiries are whole seconds, so rounding shows. */
const T0 = new Date('2031-03-01T12:00:00.500Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

const drivers: [string, () => Promise<BlobStore>][] = [
  [
    'filesystem',
    async () => {
      const store = new FsBlobStore(path.join(stack().tmpDir, uniqueName('retention-fs')));
      await store.init();
      return store;
    },
  ],
  [
    's3 (Ceph RGW)',
    async () => {
      const store = new S3BlobStore({ ...stack().s3, bucket: uniqueName('retention') });
      await store.init();
      return store;
    },
  ],
];

/** A blob store that notes the keys it stores, counts deletions per key, and can be made to fail or hold them. */
class InstrumentedBlobStore implements BlobStore {
  readonly puts: string[] = [];
  readonly deletes = new Map<string, number>();
  failKeys: ((key: string) => boolean) | null = null;
  beforeDelete: (() => Promise<void>) | null = null;

  constructor(private readonly inner: BlobStore) {}

  put: BlobStore['put'] = (key, body, options) => {
    this.puts.push(key);
    return this.inner.put(key, body, options);
  };
  get: BlobStore['get'] = (key) => this.inner.get(key);
  stat: BlobStore['stat'] = (key) => this.inner.stat(key);
  presignGet: BlobStore['presignGet'] = (key, seconds) => this.inner.presignGet(key, seconds);

  async delete(key: string): Promise<void> {
    await this.beforeDelete?.();
    if (this.failKeys?.(key)) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9 (S3 down)'), { code: 'ECONNREFUSED' });
    await this.inner.delete(key);
    this.deletes.set(key, (this.deletes.get(key) ?? 0) + 1);
  }

  get totalDeletes(): number {
    return [...this.deletes.values()].reduce((a, b) => a + b, 0);
  }
}

interface ArtifactRow {
  id: string;
  run_id: string | null;
  blob_key: string;
  mime_type: string;
  size_bytes: bigint;
  metadata: unknown;
  expires_at: Date | null;
  deleted_at: Date | null;
}

const keyOf = (ref: string) => new URL(ref).pathname.slice('/blobs/'.length);

describe.each(drivers)('artifact retention over the %s blob store', (_name, makeStore) => {
  let db: TestDatabase;
  let database: Database;
  let prisma: PrismaClient;
  let raw: BlobStore;
  let store: InstrumentedBlobStore;
  let repo: ArtifactRepository;
  let runId: string;
  let clock: Date;

  /** The artifact store of the run, on the test's clock, keeping artifacts `retentionSeconds` (none: a recipe asset). */
  const artifactsOf = (retentionSeconds: number | undefined, recordFor: string | null = runId) =>
    new BlobArtifactStore({
      store,
      signer,
      publicBaseUrl: BASE,
      keyPrefix: recordFor ? `runs/${recordFor}` : 'assets',
      urlTtlSeconds: 600,
      retentionSeconds,
      recorder: repo.recorderFor(recordFor),
      now: () => clock,
    });

  const sweeperOf = (blobs: BlobStore, options: Partial<RetentionSweeperOptions> = {}) =>
    createRetentionSweeper({ artifacts: repo, blobs, log: silent, batchSize: 10, intervalMs: 3_600_000, now: () => clock, ...options });

  const rowOf = async (blobKey: string) =>
    (await prisma.$queryRaw<ArtifactRow[]>`SELECT * FROM artifacts WHERE blob_key = ${blobKey}`)[0];

  beforeEach(async () => {
    // A database per test: a sweep sees every expired row of its database.
    db = await createTestDatabase(stack().postgres, stack().templateDatabase);
    database = createDatabase(db.url, { poolSize: 12 });
    prisma = database.prisma;
    raw = await makeStore();
    store = new InstrumentedBlobStore(raw);
    repo = new ArtifactRepository(prisma);
    const account = await seedAccount(prisma, { slug: 'retention', scopes: ['run'] });
    runId = await new RunRepository(database).createRun({
      orgId: account.orgId,
      userId: account.userId,
      tokenId: account.tokenId,
      definition: { version: 2, nodes: [] },
      inputs: {},
      capMicros: 500_000,
      steps: [],
    });
    clock = T0;
  });

  afterEach(async () => {
    await database?.close();
    await db?.drop();
  });

  it('records each stored artifact with its expiry, and signs its URL to expire at that same instant', async () => {
    const artifact = await artifactsOf(RETENTION).put(Buffer.from('png bytes'), { mimeType: 'image/png', metadata: { width: 2, height: 1 } });
    const url = new URL(artifact.ref!);
    const row = await rowOf(keyOf(artifact.ref!));
    const expected = new Date(Math.floor(T0.getTime() / 1000) * 1000 + RETENTION * 1000);
    expect(row).toMatchObject({ run_id: runId, mime_type: 'image/png', size_bytes: 9n, metadata: { width: 2, height: 1 }, expires_at: expected, deleted_at: null });
    expect(Number(url.searchParams.get('expires')) * 1000).toBe(row!.expires_at!.getTime());
    expect(keyOf(artifact.ref!)).toMatch(new RegExp(`^runs/${runId}/[0-9a-f-]{36}\\.png$`));

    // Still readable the second before it expires; refused from then on.
    clock = new Date(expected.getTime() - 1000);
    await expect(artifactsOf(RETENTION).read(artifact)).resolves.toMatchObject({ bytes: Buffer.from('png bytes') });
    clock = expected;
    await expect(artifactsOf(RETENTION).read(artifact)).rejects.toThrow('expired');
  });

  it('records artifacts without retention with no expiry, and signs their URLs for urlTtlSeconds', async () => {
    const asset = await artifactsOf(undefined, null).put(Buffer.from('{}'), { mimeType: 'application/json' });
    expect(await rowOf(keyOf(asset.ref!))).toMatchObject({ run_id: null, expires_at: null, metadata: {} });
    expect(Number(new URL(asset.ref!).searchParams.get('expires'))).toBe(Math.floor(T0.getTime() / 1000) + 600);
  });

  it('deletes expired blobs and marks their rows, leaving unexpired artifacts, recipe assets and the run record alone', async () => {
    const runs = new RunRepository(database);
    const old = await artifactsOf(RETENTION).put(Buffer.from('old'), { mimeType: 'image/png' });
    clock = at(DAY);
    const young = await artifactsOf(RETENTION).put(Buffer.from('young'), { mimeType: 'image/png' });
    const asset = await artifactsOf(undefined, null).put(Buffer.from('asset'), { mimeType: 'image/png' });
    const outputs = { image: old, later: young };
    await runs.markRunning(runId);
    await runs.completeRun(runId, outputs);
    const storedOutputs = async () => (await prisma.run.findUniqueOrThrow({ where: { id: runId }, select: { outputs: true } })).outputs;
    const before = await storedOutputs();

    clock = at(RETENTION - 1);
    await expect(sweeperOf(store).sweepOnce()).resolves.toEqual({ deleted: 0, failed: 0 });

    clock = at(RETENTION + 10);
    await expect(sweeperOf(store).sweepOnce()).resolves.toEqual({ deleted: 1, failed: 0 });
    expect(await raw.stat(keyOf(old.ref!))).toBeNull();
    expect((await rowOf(keyOf(old.ref!)))?.deleted_at).toBeInstanceOf(Date);
    for (const kept of [young, asset]) {
      expect(await raw.stat(keyOf(kept.ref!))).not.toBeNull();
      expect((await rowOf(keyOf(kept.ref!)))?.deleted_at).toBeNull();
    }

    // Long after every retention: the run's artifact goes, the recipe asset never does.
    clock = at(100 * 365 * DAY);
    await expect(sweeperOf(store).sweepOnce()).resolves.toEqual({ deleted: 1, failed: 0 });
    await expect(sweeperOf(store).sweepOnce()).resolves.toEqual({ deleted: 0, failed: 0 });
    expect(await raw.stat(keyOf(young.ref!))).toBeNull();
    expect(await raw.stat(keyOf(asset.ref!))).not.toBeNull();
    expect((await rowOf(keyOf(asset.ref!)))?.deleted_at).toBeNull();
    expect(store.deletes).toEqual(new Map([[keyOf(old.ref!), 1], [keyOf(young.ref!), 1]]));

    expect(await storedOutputs()).toEqual(before);
    expect(before).toEqual(JSON.parse(JSON.stringify(outputs)));
  });

  it('marks an artifact whose blob is already gone', async () => {
    const artifact = await artifactsOf(RETENTION).put(Buffer.from('gone'), { mimeType: 'text/plain' });
    await raw.delete(keyOf(artifact.ref!));
    clock = at(RETENTION);
    await expect(sweeperOf(store).sweepOnce()).resolves.toEqual({ deleted: 1, failed: 0 });
    expect((await rowOf(keyOf(artifact.ref!)))?.deleted_at).toBeInstanceOf(Date);
  });

  it('leaves the rows of blobs it could not delete for the next sweep, counts them, and carries on with the rest', async () => {
    const put = artifactsOf(RETENTION);
    const refs: string[] = [];
    for (let i = 0; i < 7; i++) refs.push((await put.put(Buffer.from(`blob ${i}`), { mimeType: 'text/plain' })).ref!);
    clock = at(RETENTION + 1);

    // The store is down: nothing is deleted or marked, and the sweep gives up after one batch.
    store.failKeys = () => true;
    await expect(sweeperOf(store, { batchSize: 3 }).sweepOnce()).resolves.toEqual({ deleted: 0, failed: 3 });
    for (const ref of refs) {
      expect(await raw.stat(keyOf(ref))).not.toBeNull();
      expect((await rowOf(keyOf(ref)))?.deleted_at).toBeNull();
    }

    // One blob keeps failing: it is passed over within the sweep, so the others still go.
    const stubborn = keyOf(refs[0]!);
    store.failKeys = (key) => key === stubborn;
    await expect(sweeperOf(store, { batchSize: 3 }).sweepOnce()).resolves.toEqual({ deleted: 6, failed: 1 });
    expect((await rowOf(stubborn))?.deleted_at).toBeNull();
    expect(await raw.stat(stubborn)).not.toBeNull();

    store.failKeys = null;
    await expect(sweeperOf(store, { batchSize: 3 }).sweepOnce()).resolves.toEqual({ deleted: 1, failed: 0 });
    expect(await raw.stat(stubborn)).toBeNull();
    expect(store.totalDeletes).toBe(7);
  });

  it('removes the blob again when recording it fails, so no unrecorded blob is left behind', async () => {
    const failing = new BlobArtifactStore({
      store,
      signer,
      publicBaseUrl: BASE,
      keyPrefix: `runs/${runId}`,
      urlTtlSeconds: 600,
      retentionSeconds: RETENTION,
      recorder: { record: () => Promise.reject(new Error('database down')) },
    });
    await expect(failing.put(Buffer.from('x'), { mimeType: 'image/png' })).rejects.toThrow('database down');
    expect(store.puts).toHaveLength(1);
    expect(await raw.stat(store.puts[0]!)).toBeNull();
    expect(await prisma.artifact.count()).toBe(0);
  });
});

describe('two retention sweepers at once (Ceph RGW)', () => {
  let db: TestDatabase;
  let database: Database;
  let prisma: PrismaClient;

  beforeAll(async () => {
    db = await createTestDatabase(stack().postgres, stack().templateDatabase);
    database = createDatabase(db.url, { poolSize: 12 });
    prisma = database.prisma;
  });

  afterAll(async () => {
    await database?.close();
    await db?.drop();
  });

  it('delete each expired artifact exactly once, working on different batches at the same time', async () => {
    const raw = new S3BlobStore({ ...stack().s3, bucket: uniqueName('retention-race') });
    await raw.init();
    const repo = new ArtifactRepository(prisma);
    const account = await seedAccount(prisma, { slug: 'race', scopes: ['run'] });
    const runId = await new RunRepository(database).createRun({
      orgId: account.orgId, userId: account.userId, tokenId: account.tokenId, definition: {}, inputs: {}, capMicros: 1, steps: [],
    });
    const put = new BlobArtifactStore({
      store: raw, signer, publicBaseUrl: BASE, keyPrefix: `runs/${runId}`, urlTtlSeconds: 600, retentionSeconds: DAY, recorder: repo.recorderFor(runId), now: () => T0,
    });
    const refs = await Promise.all(Array.from({ length: 40 }, (_, i) => put.put(Buffer.from(`bytes ${i}`), { mimeType: 'text/plain' })));

    // Each sweeper's first deletion waits until the other has started deleting too: were the
    // second blocked behind the first one's rows, both would wait here until the test times out.
    const a = new InstrumentedBlobStore(raw);
    const b = new InstrumentedBlobStore(raw);
    let release!: () => void;
    const bothDeleting = new Promise<void>((resolve) => (release = resolve));
    const entered = new Set<InstrumentedBlobStore>();
    for (const store of [a, b]) {
      store.beforeDelete = async () => {
        entered.add(store);
        if (entered.size === 2) release();
        await bothDeleting;
      };
    }
    const sweeper = (blobs: BlobStore) =>
      createRetentionSweeper({ artifacts: repo, blobs, log: silent, batchSize: 4, intervalMs: 3_600_000, deleteConcurrency: 2, now: () => at(2 * DAY) });

    const [ra, rb] = await Promise.all([sweeper(a).sweepOnce(), sweeper(b).sweepOnce()]);
    expect(ra.failed + rb.failed).toBe(0);
    expect(ra.deleted + rb.deleted).toBe(40);
    expect(ra.deleted).toBeGreaterThan(0);
    expect(rb.deleted).toBeGreaterThan(0);
    const counts = new Map<string, number>();
    for (const store of [a, b]) for (const [key, n] of store.deletes) counts.set(key, (counts.get(key) ?? 0) + n);
    expect(counts.size).toBe(40);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    for (const ref of refs) expect(await raw.stat(keyOf(ref.ref!))).toBeNull();
    const [{ left }] = await prisma.$queryRaw<{ left: bigint }[]>`SELECT count(*) AS left FROM artifacts WHERE deleted_at IS NULL`;
    expect(left).toBe(0n);
  });

  it('runs on a timer once started, and stop() waits for the sweep in progress', async () => {
    const raw = new FsBlobStore(path.join(stack().tmpDir, uniqueName('retention-loop')));
    await raw.init();
    const repo = new ArtifactRepository(prisma);
    const put = new BlobArtifactStore({
      store: raw, signer, publicBaseUrl: BASE, keyPrefix: 'runs/loop', urlTtlSeconds: 600, retentionSeconds: DAY, recorder: repo.recorderFor(null), now: () => at(10 * DAY),
    });
    const artifact = await put.put(Buffer.from('loop'), { mimeType: 'text/plain' });
    const store = new InstrumentedBlobStore(raw);
    let started!: () => void;
    const deleting = new Promise<void>((resolve) => (started = resolve));
    store.beforeDelete = async () => {
      started();
      await new Promise((resolve) => setTimeout(resolve, 200));
    };
    const sweeper = createRetentionSweeper({ artifacts: repo, blobs: store, log: silent, batchSize: 10, intervalMs: 3_600_000, initialDelayMs: 0, now: () => at(20 * DAY) });
    sweeper.start();
    await deleting;
    await sweeper.stop();
    // The sweep had finished (blob deleted, row marked) by the time stop() resolved.
    expect(store.totalDeletes).toBe(1);
    const [row] = await prisma.$queryRaw<{ deleted_at: Date | null }[]>`SELECT deleted_at FROM artifacts WHERE blob_key = ${keyOf(artifact.ref!)}`;
    expect(row?.deleted_at).toBeInstanceOf(Date);
  });
});
