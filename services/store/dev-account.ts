import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseToken } from '../platform/access-token';
import { hashPassword, verifyPassword } from '../platform/passwords';
import { LedgerRepository, MembershipRepository, OrganizationRepository, TokenRepository, UserRepository, type Db } from './index';
import { issuePersonalToken } from './account-admin';

/** The local development account `make run` creates; fixed so that scripts and docs can name it. */
export const DEV_ACCOUNT = {
  orgSlug: 'dev',
  orgName: 'Dev Org',
  email: 'dev@localhost',
  userName: 'Dev User',
  creditMicros: 10_000_000,
  creditNote: 'dev bootstrap: initial credit',
  tokenName: 'dev bootstrap',
  scopes: ['read', 'run'] as const,
  tokenFile: 'dev-token',
  passwordFile: 'dev-password',
};

/** What {@link bootstrapDevAccount} found or created. */
export interface DevAccount {
  orgId: string;
  userId: string;
  /** The personal access token's value, as saved in `<dataDir>/dev-token`. */
  token: string;
  /** False when a new token was issued (first run, or the saved one was revoked, expired or unknown). */
  tokenReused: boolean;
  /**
   * The dev user's password for the web editor's sign-in and the device-login page, as saved in
   * `<dataDir>/dev-password`; null when the user was given another password (by `make admin`).
   */
  password: string | null;
  balanceMicros: number;
}

async function readSaved(file: string): Promise<string | null> {
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

// Written beside the target and renamed over it, so a reader never sees half a secret and the
// secret is never, even briefly, readable by others.
async function saveSecret(file: string, value: string): Promise<void> {
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, `${value}\n`, { mode: 0o600 });
  await rename(temp, file);
}

/**
 * Idempotently creates the dev organization (credited once with 10 USD), the dev user as its
 * owner, and a personal access token with scopes read and run. Only a token's hash is stored, so
 * the value is kept in `<dataDir>/dev-token` (mode 0600) and reused while the database still
 * accepts it.
 */
export async function bootstrapDevAccount(options: { db: Db; dataDir: string; now?: Date }): Promise<DevAccount> {
  const now = options.now ?? new Date();
  const orgs = new OrganizationRepository(options.db);
  const users = new UserRepository(options.db);
  const tokens = new TokenRepository(options.db);
  const { organization } = await orgs.ensure({ slug: DEV_ACCOUNT.orgSlug, name: DEV_ACCOUNT.orgName });
  const { user } = await users.ensure({ email: DEV_ACCOUNT.email, name: DEV_ACCOUNT.userName });
  await new MembershipRepository(options.db).ensure({ orgId: organization.id, userId: user.id, role: 'owner' });
  const { balanceMicros } = await new LedgerRepository(options.db).creditOnce(organization.id, DEV_ACCOUNT.creditMicros, DEV_ACCOUNT.creditNote);

  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  const password = await devPassword(users, user.id, path.join(options.dataDir, DEV_ACCOUNT.passwordFile));

  const tokenFile = path.join(options.dataDir, DEV_ACCOUNT.tokenFile);
  const saved = await readSaved(tokenFile);
  if (saved) {
    const parsed = parseToken(saved);
    const record = parsed.ok ? await tokens.findByHash(parsed.hash) : null;
    const usable =
      record !== null &&
      record.revokedAt === null &&
      (record.expiresAt === null || record.expiresAt > now) &&
      record.userId === user.id &&
      record.orgId === organization.id &&
      DEV_ACCOUNT.scopes.every((s) => record.scopes.includes(s));
    if (usable) return { orgId: organization.id, userId: user.id, token: saved, tokenReused: true, password, balanceMicros };
  }

  const issued = await issuePersonalToken(options.db, { userId: user.id, orgId: organization.id, name: DEV_ACCOUNT.tokenName, scopes: DEV_ACCOUNT.scopes });
  await saveSecret(tokenFile, issued.value);
  return { orgId: organization.id, userId: user.id, token: issued.value, tokenReused: false, password, balanceMicros };
}

/**
 * The dev user signs in to the web editor and approves `svc login` with a password: a random one
 * is set the first time (when the user has none) and kept in `<dataDir>/dev-password`, mode 0600.
 * A saved password that no longer matches (changed with `make admin`) is not reported.
 */
async function devPassword(users: UserRepository, userId: string, file: string): Promise<string | null> {
  const saved = await readSaved(file);
  const user = await users.findById(userId);
  const stored = user ? (await users.findCredentialsByEmail(user.email))?.passwordHash : null;
  if (saved && stored) return (await verifyPassword(saved, stored)) ? saved : null;
  if (stored) return null;
  const fresh = randomBytes(12).toString('base64url');
  if (!(await users.setPasswordHashIfNone(userId, await hashPassword(fresh)))) return null;
  await saveSecret(file, fresh);
  return fresh;
}
