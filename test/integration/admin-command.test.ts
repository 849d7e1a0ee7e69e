import { spawn } from 'node:child_process';
import path from 'node:path';
import { hashToken } from '../../services/platform/access-token';
import { verifyPassword } from '../../services/platform/passwords';
import { createPrismaClient, LedgerRepository, MembershipRepository, OrganizationRepository, UserRepository, type PrismaClient } from '../../services/store';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { stack } from '../support/stack';

// Every case starts the command as a process (tsx compiles it): seconds, not milliseconds.
jest.setTimeout(120_000);

const ROOT = path.join(__dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('the admin command (npm run admin)', () => {
  let db: TestDatabase;
  let prisma: PrismaClient;

  beforeAll(async () => {
    db = await createTestDatabase(stack().postgres);
    prisma = createPrismaClient(db.url);
  });

  afterAll(async () => {
    await prisma?.$disconnect();
    await db?.drop();
  });

  /** Runs `tsx workers/admin.ts ...args` as its own process against the test database. */
  function admin(args: string[], options: { input?: string; env?: Record<string, string | undefined> } = {}): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      const child = spawn(TSX, ['workers/admin.ts', ...args], { cwd: ROOT, env: { ...process.env, DATABASE_URL: db.url, ...options.env }, stdio: 'pipe' });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(options.input ?? '');
    });
  }

  async function json<T>(args: string[], input?: string): Promise<T> {
    const out = await admin([...args, '--json'], { input });
    expect({ code: out.code, stderr: out.stderr }).toEqual({ code: 0, stderr: '' });
    // One document and its line break, so a shell prompt does not start on its last line.
    expect(out.stdout).toMatch(/}\n$/);
    return JSON.parse(out.stdout) as T;
  }

  /** A failure: exit status 1 and exactly one line on stderr, which contains `message`. */
  async function fails(args: string[], message: string, input?: string): Promise<void> {
    const out = await admin(args, { input });
    expect(out.code).toBe(1);
    expect(out.stdout).toBe('');
    expect(out.stderr.trim().split('\n')).toHaveLength(1);
    expect(out.stderr).toContain(message);
  }

  it('creates organizations with kebab-case slugs and refuses reserved, malformed and taken ones', async () => {
    const { organization } = await json<{ organization: { id: string; slug: string; balanceMicros: number } }>(['org', 'create', 'acme-labs', '--name', 'Acme Labs']);
    expect(organization).toMatchObject({ slug: 'acme-labs', balanceMicros: 0 });
    await Promise.all([
      fails(['org', 'create', 'core', '--name', 'Core'], 'organization slug "core" is reserved for the platform'),
      fails(['org', 'create', 'Acme_Labs', '--name', 'X'], 'organization slug "Acme_Labs" must be kebab-case'),
      fails(['org', 'create', 'acme-labs', '--name', 'Again'], 'the organization slug "acme-labs" is taken'),
    ]);
    // The rule holds for every caller of the store, not only this command.
    await expect(new OrganizationRepository(prisma).create({ slug: 'admin', name: 'Admin' })).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('creates users with a password read from stdin, hashed with scrypt, never taken from the arguments', async () => {
    const password = 'a long enough secret';
    const { user, password: hasPassword } = await json<{ user: { id: string; email: string }; password: boolean }>(['user', 'create', 'Ada@Example.test', '--name', 'Ada', '--password-stdin'], `${password}\n`);
    expect(user.email).toBe('ada@example.test');
    expect(hasPassword).toBe(true);
    const row = await prisma.user.findUniqueOrThrow({ where: { id: user.id } });
    expect(row.passwordHash).toMatch(/^scrypt\$32768\$8\$1\$/);
    await expect(verifyPassword(password, row.passwordHash!)).resolves.toBe(true);

    await Promise.all([
      fails(['user', 'create', 'bob@example.test', '--name', 'Bob', '--password-stdin'], 'at least 10 characters', 'short\n'),
      fails(['user', 'create', 'ada@example.test', '--name', 'Ada again'], 'a user with the email ada@example.test exists already'),
      fails(['user', 'create', 'not-an-email', '--name', 'X'], 'is not an email address'),
    ]);
    // There is no option that takes a password.
    const out = await admin(['user', 'create', 'eve@example.test', '--name', 'Eve', '--password', 'in the process list']);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain("unknown option '--password'");
  });

  it('adds members with a role, once', async () => {
    // Set-up through the store; the command's own calls are what is tested.
    await new OrganizationRepository(prisma).create({ slug: 'members-org', name: 'Members' });
    await new UserRepository(prisma).create({ email: 'member@example.test', name: 'Member' });
    const added = await json<{ role: string }>(['member', 'add', 'members-org', 'member@example.test', '--role', 'admin']);
    expect(added).toEqual({ organization: 'members-org', user: 'member@example.test', role: 'admin' });
    await Promise.all([
      fails(['member', 'add', 'members-org', 'member@example.test'], 'is a member of members-org already (role admin)'),
      fails(['member', 'add', 'members-org', 'member@example.test', '--role', 'king'], '--role must be one of owner, admin, member'),
      fails(['member', 'add', 'no-such-org', 'member@example.test'], 'no organization with the slug "no-such-org"'),
      fails(['member', 'add', 'members-org', 'nobody@example.test'], 'no user with the email nobody@example.test'),
    ]);
  });

  it('adds credit as an exact ledger entry and refuses amounts that are not positive decimal USD within the maximum', async () => {
    await new OrganizationRepository(prisma).create({ slug: 'credit-org', name: 'Credit' });
    const first = await json<{ creditMicros: number; balanceUsd: number }>(['credit', 'add', 'credit-org', '25.10', '--note', 'invoice 1042']);
    expect(first).toMatchObject({ creditMicros: 25_100_000, balanceUsd: 25.1 });
    const plain = await admin(['credit', 'add', 'credit-org', '0.000001', '--note', 'one micro']);
    expect(plain).toEqual({ code: 0, stdout: 'credited credit-org with 0.000001 USD; balance 25.100001 USD\n', stderr: '' });

    const org = await new OrganizationRepository(prisma).findBySlug('credit-org');
    const ledger = new LedgerRepository(prisma);
    await expect(ledger.audit(org!.id)).resolves.toEqual({ balanceMicros: 25_100_001, ledgerTotalMicros: 25_100_001 });
    const entries = await ledger.entries(org!.id);
    expect(entries.map((e) => [e.kind, e.amountMicros, e.note])).toEqual(expect.arrayContaining([['credit', 25_100_000, 'invoice 1042'], ['credit', 1, 'one micro']]));

    await Promise.all([
      fails(['credit', 'add', 'credit-org', '0', '--note', 'x'], 'must be more than 0 USD'),
      fails(['credit', 'add', 'credit-org', '1e3', '--note', 'x'], '"1e3" is not a USD amount'),
      fails(['credit', 'add', 'credit-org', '0.0000001', '--note', 'x'], 'at most 6 decimals'),
      fails(['credit', 'add', 'credit-org', '100000.01', '--note', 'x'], 'at most 100000 USD per credit'),
      fails(['credit', 'add', 'credit-org', '5', '--note', '  '], '--note must say why'),
    ]);
    const missingNote = await admin(['credit', 'add', 'credit-org', '5']);
    expect(missingNote.code).toBe(1);
    expect(missingNote.stderr).toContain("required option '--note <text>' not specified");
  });

  it('issues a personal access token for a member, printed once, of which only the hash is stored', async () => {
    const org = await new OrganizationRepository(prisma).create({ slug: 'ci-org', name: 'CI' });
    const user = await new UserRepository(prisma).create({ email: 'ci@example.test', name: 'CI bot' });
    await new MembershipRepository(prisma).create({ orgId: org.id, userId: user.id, role: 'member' });
    const out = await admin(['token', 'create', 'ci@example.test', '--org', 'ci-org', '--name', 'deploys', '--scopes', 'read,run', '--expires-days', '30']);
    expect(out.code).toBe(0);
    const value = out.stdout.trim();
    expect(value).toMatch(/^svc_[0-9A-Za-z]{49}$/);
    expect(out.stdout).toBe(`${value}\n`);
    expect(out.stderr).toContain('shown only now');

    const row = await prisma.accessToken.findUniqueOrThrow({ where: { tokenHash: hashToken(value) } });
    expect(row).toMatchObject({ kind: 'personal', name: 'deploys', scopes: ['read', 'run'], revokedAt: null });
    expect(Math.abs(row.expiresAt!.getTime() - (Date.now() + 30 * 86_400_000))).toBeLessThan(120_000);
    const dump = JSON.stringify(await prisma.accessToken.findMany());
    expect(dump).not.toContain(value);

    await Promise.all([
      fails(['token', 'create', 'ci@example.test', '--org', 'ci-org', '--name', 'x', '--scopes', 'read', '--expires-days', '366'], '--expires-days must be a whole number from 1 to 365'),
      fails(['token', 'create', 'ci@example.test', '--org', 'ci-org', '--name', 'x', '--scopes', 'admin'], '--scopes must be a comma-separated list of read, run; unknown: admin'),
      fails(['token', 'create', 'ci@example.test', '--org', 'acme-labs', '--name', 'x', '--scopes', 'read'], 'ci@example.test is not a member of acme-labs'),
    ]);
  });

  it('lists organizations and users', async () => {
    const org = await new OrganizationRepository(prisma).create({ slug: 'listed-org', name: 'Listed' });
    const user = await new UserRepository(prisma).create({ email: 'listed@example.test', name: 'Listed' });
    await new MembershipRepository(prisma).create({ orgId: org.id, userId: user.id, role: 'owner' });
    const { organizations } = await json<{ organizations: { slug: string; balanceUsd: number }[] }>(['org', 'list']);
    expect(organizations).toEqual(expect.arrayContaining([expect.objectContaining({ slug: 'listed-org', balanceUsd: 0 })]));
    expect((await admin(['org', 'list'])).stdout).toContain(`listed-org\tListed\t0.00 USD\t${org.id}\n`);
    // Exact, not rounded up to 10.00.
    await json(['credit', 'add', 'listed-org', '9.999051', '--note', 'odd amount']);
    expect((await admin(['org', 'list'])).stdout).toContain(`listed-org\tListed\t9.999051 USD\t${org.id}\n`);
    const { users } = await json<{ users: { email: string; memberships: { slug: string; role: string }[] }[] }>(['user', 'list']);
    expect(users.find((u) => u.email === 'listed@example.test')?.memberships).toEqual([{ slug: 'listed-org', role: 'owner' }]);
    const text = await admin(['user', 'list']);
    expect(text.stdout).toContain('listed@example.test\tListed\tlisted-org:owner\n');
  });

  it("sets an organization's own step concurrency limit, lists it, clears it, and refuses what is not a limit", async () => {
    const org = await new OrganizationRepository(prisma).create({ slug: 'limited-org', name: 'Limited' });
    await expect(json(['org', 'limit', 'limited-org', '--step-concurrency', '8'])).resolves.toEqual({ organization: 'limited-org', stepConcurrency: 8 });
    await expect(new OrganizationRepository(prisma).stepConcurrencyLimits()).resolves.toEqual(new Map([[org.id, 8]]));
    expect((await admin(['org', 'list'])).stdout).toContain(`limited-org\tLimited\t0.00 USD\t${org.id}\tsteps at once: 8\n`);
    expect((await admin(['org', 'limit', 'limited-org', '--step-concurrency', '0'])).stdout).toContain('limited-org: no limit');
    await json(['org', 'limit', 'limited-org', '--step-concurrency', 'default']);
    await expect(new OrganizationRepository(prisma).stepConcurrencyLimits()).resolves.toEqual(new Map());
    await Promise.all([
      fails(['org', 'limit', 'limited-org', '--step-concurrency', '-1'], 'the limit must be a whole number from 0 (no limit) to 1000000, or "default", got "-1"'),
      fails(['org', 'limit', 'limited-org', '--step-concurrency', '2.5'], 'got "2.5"'),
      fails(['org', 'limit', 'nobody', '--step-concurrency', '3'], 'no organization with the slug "nobody"'),
    ]);
  });

  it('stops with one line and status 2 when DATABASE_URL is missing or malformed', async () => {
    const missing = await admin(['org', 'list'], { env: { DATABASE_URL: '' } });
    expect(missing).toEqual({
      code: 2,
      stdout: '',
      stderr: 'admin: DATABASE_URL is required (Postgres connection URL); for the database of make run: make admin ARGS="...", or first: set -a; . .data/env; set +a\n',
    });
    const malformed = await admin(['org', 'list'], { env: { DATABASE_URL: 'mysql://x' } });
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('DATABASE_URL must use postgres: or postgresql:');
  });
});
