import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { issueToken } from '../../services/platform/access-token';
import {
  createPrismaClient,
  LedgerRepository,
  MembershipRepository,
  OrganizationRepository,
  TokenRepository,
  UserRepository,
  type PrismaClient,
} from '../../services/store';
import { bootstrapDevAccount, DEV_ACCOUNT } from '../../services/store/dev-account';
import { hashPassword, verifyPassword } from '../../services/platform/passwords';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { stack } from '../support/stack';

describe('store repositories', () => {
  let db: TestDatabase;
  let prisma: PrismaClient;
  let orgs: OrganizationRepository;
  let users: UserRepository;
  let memberships: MembershipRepository;
  let tokens: TokenRepository;
  let ledger: LedgerRepository;
  let counter = 0;

  beforeAll(async () => {
    db = await createTestDatabase(stack().postgres, stack().templateDatabase);
    prisma = createPrismaClient(db.url, { poolSize: 4 });
    orgs = new OrganizationRepository(prisma);
    users = new UserRepository(prisma);
    memberships = new MembershipRepository(prisma);
    tokens = new TokenRepository(prisma);
    ledger = new LedgerRepository(prisma);
  });

  afterAll(async () => {
    await prisma?.$disconnect();
    await db?.drop();
  });

  /** A fresh organization and owner, so tests do not share rows. */
  async function account() {
    counter += 1;
    const org = await orgs.create({ slug: `org-${counter}`, name: `Org ${counter}` });
    const user = await users.create({ email: `user-${counter}@example.test`, name: `User ${counter}` });
    await memberships.create({ orgId: org.id, userId: user.id, role: 'owner' });
    return { org, user };
  }

  describe('organizations, users and memberships', () => {
    it('creates an organization with a zero balance and finds it by slug', async () => {
      const created = await orgs.create({ slug: 'acme', name: 'Acme' });
      expect(created).toMatchObject({ slug: 'acme', name: 'Acme', slugFrozen: false, balanceMicros: 0 });
      expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
      await expect(orgs.findBySlug('acme')).resolves.toEqual(created);
      await expect(orgs.findBySlug('nobody')).resolves.toBeNull();
      await expect(orgs.create({ slug: 'acme', name: 'Other' })).rejects.toMatchObject({ code: 'conflict', message: 'the organization slug "acme" is taken' });
    });

    it('ensure() creates once and then returns the existing rows unchanged', async () => {
      const first = await orgs.ensure({ slug: 'ensured', name: 'First name' });
      const second = await orgs.ensure({ slug: 'ensured', name: 'Second name' });
      expect(first.created).toBe(true);
      expect(second).toEqual({ organization: first.organization, created: false });

      const user = await users.ensure({ email: 'Ensured@Example.test', name: 'Ensured' });
      expect(user.user.email).toBe('ensured@example.test');
      await expect(users.ensure({ email: 'ensured@example.test', name: 'Other' })).resolves.toEqual({ user: user.user, created: false });

      const member = await memberships.ensure({ orgId: first.organization.id, userId: user.user.id, role: 'owner' });
      expect(member.created).toBe(true);
      const again = await memberships.ensure({ orgId: first.organization.id, userId: user.user.id, role: 'member' });
      expect(again).toEqual({ membership: member.membership, created: false });
      await expect(memberships.listForUser(user.user.id)).resolves.toEqual([member.membership]);
    });

    it('finds users by email whatever its case, and keeps the password hash out of the plain lookup', async () => {
      await users.create({ email: 'Mixed.Case@Example.TEST', name: 'Mixed', passwordHash: 'scrypt$...' });
      const found = await users.findByEmail('mixed.case@example.test');
      expect(found).toMatchObject({ email: 'mixed.case@example.test', name: 'Mixed' });
      expect(found).not.toHaveProperty('passwordHash');
      await expect(users.findCredentialsByEmail('MIXED.case@example.test')).resolves.toMatchObject({ passwordHash: 'scrypt$...' });
    });

    it('freezes an organization slug once', async () => {
      const { org } = await account();
      await orgs.freezeSlug(org.id);
      await orgs.freezeSlug(org.id);
      await expect(orgs.findById(org.id)).resolves.toMatchObject({ slugFrozen: true });
    });
  });

  describe('access tokens', () => {
    it('finds a token by the hash of its value and never returns the hash', async () => {
      const { org, user } = await account();
      const issued = issueToken('personal');
      const expiresAt = new Date(Date.now() + 86_400_000);
      const created = await tokens.create({ userId: user.id, orgId: org.id, name: 'ci', hash: issued.hash, displayPrefix: issued.displayPrefix, scopes: ['read', 'run'], kind: 'personal', expiresAt });

      expect(created).toMatchObject({ name: 'ci', displayPrefix: issued.displayPrefix, scopes: ['read', 'run'], kind: 'personal', revokedAt: null, lastUsedAt: null });
      expect(JSON.stringify(created)).not.toContain(issued.hash);
      await expect(tokens.findByHash(issued.hash)).resolves.toEqual({ id: created.id, userId: user.id, orgId: org.id, scopes: ['read', 'run'], kind: 'personal', expiresAt, revokedAt: null });
      await expect(tokens.findByHash(issueToken('personal').hash)).resolves.toBeNull();
    });

    it('revokes a token once, and only for its owner when an owner is given', async () => {
      const { org, user } = await account();
      const other = await account();
      const issued = issueToken('personal');
      const created = await tokens.create({ userId: user.id, orgId: org.id, name: 'x', hash: issued.hash, displayPrefix: issued.displayPrefix, scopes: ['read'], kind: 'personal' });

      await expect(tokens.revoke(created.id, { userId: other.user.id })).resolves.toBe(false);
      await expect(tokens.findByHash(issued.hash)).resolves.toMatchObject({ revokedAt: null });

      const at = new Date('2030-01-02T03:04:05.678Z');
      await expect(tokens.revoke(created.id, { userId: user.id, at })).resolves.toBe(true);
      await expect(tokens.findByHash(issued.hash)).resolves.toMatchObject({ revokedAt: at });
      await expect(tokens.revoke(created.id)).resolves.toBe(false);
      await expect(tokens.findByHash(issued.hash)).resolves.toMatchObject({ revokedAt: at });
    });

    it("lists a user's tokens newest first, filtered by organization or kind", async () => {
      const { org, user } = await account();
      const second = await account();
      await memberships.create({ orgId: second.org.id, userId: user.id, role: 'member' });
      const make = async (name: string, orgId: string, kind: 'personal' | 'session') => {
        const issued = issueToken(kind);
        const token = await tokens.create({ userId: user.id, orgId, name, hash: issued.hash, displayPrefix: issued.displayPrefix, scopes: ['read'], kind });
        // The next token is created after this one: listings order by creation time.
        await eventually(() => Date.now() > token.createdAt.getTime(), { intervalMs: 1, what: "the clock to pass the token's creation time" });
        return token;
      };
      const a = await make('a', org.id, 'personal');
      const b = await make('b', second.org.id, 'personal');
      const c = await make('c', org.id, 'session');

      await expect(tokens.listForUser(user.id).then((l) => l.map((t) => t.name))).resolves.toEqual(['c', 'b', 'a']);
      await expect(tokens.listForUser(user.id, { orgId: org.id }).then((l) => l.map((t) => t.id))).resolves.toEqual([c.id, a.id]);
      await expect(tokens.listForUser(user.id, { kind: 'personal' }).then((l) => l.map((t) => t.id))).resolves.toEqual([b.id, a.id]);
    });

    it('records last use in one batch and never moves it back', async () => {
      const { org, user } = await account();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const issued = issueToken('personal');
        ids.push((await tokens.create({ userId: user.id, orgId: org.id, name: `t${i}`, hash: issued.hash, displayPrefix: issued.displayPrefix, scopes: ['read'], kind: 'personal' })).id);
      }
      const later = new Date('2031-05-05T00:00:00.000Z');
      const earlier = new Date('2031-01-01T00:00:00.000Z');

      await expect(tokens.touchLastUsed([ids[0]!, ids[1]!, ids[0]!], later)).resolves.toBe(2);
      await expect(tokens.touchLastUsed(ids, earlier)).resolves.toBe(1);
      await expect(tokens.touchLastUsed([], later)).resolves.toBe(0);
      const used = await Promise.all(ids.map((id) => tokens.findById(id)));
      expect(used.map((t) => t?.lastUsedAt)).toEqual([later, later, earlier]);
    });
  });

  describe('ledger', () => {
    it('credits an organization and keeps the running balance equal to the sum of the entries', async () => {
      const { org } = await account();
      const first = await ledger.credit(org.id, 2_500_000, 'top-up');
      expect(first.balanceMicros).toBe(2_500_000);
      expect(first.entry).toMatchObject({ orgId: org.id, amountMicros: 2_500_000, kind: 'credit', note: 'top-up', runId: null, stepId: null });
      const second = await ledger.credit(org.id, 1, 'one micro');
      expect(second.balanceMicros).toBe(2_500_001);

      await expect(ledger.balance(org.id)).resolves.toBe(2_500_001);
      await expect(orgs.findById(org.id)).resolves.toMatchObject({ balanceMicros: 2_500_001 });
      await expect(ledger.audit(org.id)).resolves.toEqual({ balanceMicros: 2_500_001, ledgerTotalMicros: 2_500_001 });
      await expect(ledger.entries(org.id).then((e) => e.map((x) => x.note))).resolves.toEqual(['one micro', 'top-up']);
    });

    it('keeps every concurrent credit', async () => {
      const { org } = await account();
      await Promise.all(Array.from({ length: 20 }, (_, i) => ledger.credit(org.id, 1_000 + i, `credit ${i}`)));
      const expected = Array.from({ length: 20 }, (_, i) => 1_000 + i).reduce((a, b) => a + b, 0);
      await expect(ledger.audit(org.id)).resolves.toEqual({ balanceMicros: expected, ledgerTotalMicros: expected });
    });

    it('refuses credits that are not positive whole micro-USD, and unknown organizations', async () => {
      const { org } = await account();
      await expect(ledger.credit(org.id, 0, 'zero')).rejects.toThrow(RangeError);
      await expect(ledger.credit(org.id, -5, 'negative')).rejects.toThrow(RangeError);
      await expect(ledger.credit(org.id, 1.5, 'fraction')).rejects.toThrow(RangeError);
      const unknown = '00000000-0000-4000-8000-000000000000';
      await expect(ledger.credit(unknown, 10, 'nobody')).rejects.toMatchObject({ code: 'not_found' });
      await expect(ledger.balance(unknown)).rejects.toMatchObject({ code: 'not_found' });
      await expect(ledger.audit(org.id)).resolves.toEqual({ balanceMicros: 0, ledgerTotalMicros: 0 });
    });

    // Step charges themselves are posted by the SQL functions only (run-store.test.ts); an entry
    // naming a step posted from TypeScript (an operator's adjustment) is idempotent the same way.
    it("posts a step's entry once however often it is posted", async () => {
      const { org, user } = await account();
      await ledger.credit(org.id, 1_000_000, 'top-up');
      const run = await prisma.run.create({ data: { orgId: org.id, userId: user.id, definition: { version: 2, nodes: [] }, inputs: {}, capMicros: 500_000n } });
      const step = await prisma.step.create({ data: { runId: run.id, nodeId: 'llm' } });
      const charge = { orgId: org.id, amountMicros: -12_345, kind: 'adjustment' as const, runId: run.id, stepId: step.id, note: 'llm' };

      const first = await ledger.post(charge);
      const retries = await Promise.all([ledger.post(charge), ledger.post(charge)]);
      expect(first).toMatchObject({ duplicate: false, balanceMicros: 987_655 });
      for (const retry of retries) expect(retry).toMatchObject({ duplicate: true, balanceMicros: 987_655, entry: first.entry });
      await expect(ledger.audit(org.id)).resolves.toEqual({ balanceMicros: 987_655, ledgerTotalMicros: 987_655 });
    });

    it('creditOnce() grants a one-off credit once, even when called concurrently', async () => {
      const { org } = await account();
      const results = await Promise.all(Array.from({ length: 5 }, () => ledger.creditOnce(org.id, 10_000_000, 'welcome')));
      expect(results.filter((r) => r.credited)).toHaveLength(1);
      await expect(ledger.balance(org.id)).resolves.toBe(10_000_000);
      await expect(ledger.creditOnce(org.id, 10_000_000, 'welcome')).resolves.toMatchObject({ credited: false, balanceMicros: 10_000_000 });
    });
  });

  describe('dev bootstrap', () => {
    let dataDir: string;

    beforeAll(async () => {
      dataDir = path.join(await mkdtemp(path.join(tmpdir(), 'svc-dev-bootstrap-')), 'data');
    });

    afterAll(async () => {
      await rm(path.dirname(dataDir), { recursive: true, force: true });
    });

    it('creates the dev account once, credits it once and reuses the saved token while it is valid', async () => {
      const first = await bootstrapDevAccount({ db: prisma, dataDir });
      const tokenFile = path.join(dataDir, DEV_ACCOUNT.tokenFile);
      expect(first).toMatchObject({ tokenReused: false, balanceMicros: 10_000_000 });
      expect((await readFile(tokenFile, 'utf8')).trim()).toBe(first.token);
      expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);

      const second = await bootstrapDevAccount({ db: prisma, dataDir });
      expect(second).toEqual({ ...first, tokenReused: true });
      await expect(ledger.audit(first.orgId)).resolves.toEqual({ balanceMicros: 10_000_000, ledgerTotalMicros: 10_000_000 });
      await expect(memberships.find(first.orgId, first.userId)).resolves.toMatchObject({ role: 'owner' });
      const listed = await tokens.listForUser(first.userId);
      expect(listed).toHaveLength(1);
      expect(listed[0]).toMatchObject({ scopes: ['read', 'run'], kind: 'personal', revokedAt: null });
    });

    it('gives the dev user a password once, saved beside the token, that signs in', async () => {
      const first = await bootstrapDevAccount({ db: prisma, dataDir });
      const passwordFile = path.join(dataDir, DEV_ACCOUNT.passwordFile);
      expect(first.password).toMatch(/^[A-Za-z0-9_-]{16}$/);
      expect((await readFile(passwordFile, 'utf8')).trim()).toBe(first.password);
      expect((await stat(passwordFile)).mode & 0o777).toBe(0o600);
      const stored = await prisma.user.findUniqueOrThrow({ where: { id: first.userId } });
      await expect(verifyPassword(first.password!, stored.passwordHash!)).resolves.toBe(true);
      // Kept, not replaced, on the next start.
      await expect(bootstrapDevAccount({ db: prisma, dataDir })).resolves.toMatchObject({ password: first.password });
      // A password set another way is left alone and not reported.
      await prisma.user.update({ where: { id: first.userId }, data: { passwordHash: await hashPassword('another password here') } });
      await expect(bootstrapDevAccount({ db: prisma, dataDir })).resolves.toMatchObject({ password: null });
    });

    it('issues and saves a new token when the saved one was revoked', async () => {
      const before = await bootstrapDevAccount({ db: prisma, dataDir });
      const [saved] = await tokens.listForUser(before.userId);
      await tokens.revoke(saved!.id);

      const after = await bootstrapDevAccount({ db: prisma, dataDir });
      expect(after.tokenReused).toBe(false);
      expect(after.token).not.toBe(before.token);
      expect((await readFile(path.join(dataDir, DEV_ACCOUNT.tokenFile), 'utf8')).trim()).toBe(after.token);
      await expect(bootstrapDevAccount({ db: prisma, dataDir })).resolves.toMatchObject({ token: after.token, tokenReused: true, balanceMicros: 10_000_000 });
    });
  });
});
