import { randomUUID } from 'node:crypto';
import { SESSION_COOKIE } from '../../services/api/auth/session-cookie';
import { issueToken } from '../../services/platform/access-token';
import { hashPassword } from '../../services/platform/passwords';
import { MembershipRepository, TokenRepository, UserRepository, type PrismaClient } from '../../services/store';

/** A web editor session stored directly (as sign-in would store it), for tests of what it may do. */
export async function createBrowserSession(
  prisma: PrismaClient,
  owner: { userId: string; orgId: string },
  options: { expiresAt?: Date; scopes?: string[] } = {},
): Promise<{ id: string; value: string; cookie: string }> {
  const issued = issueToken('browser');
  const row = await new TokenRepository(prisma).create({
    userId: owner.userId,
    orgId: owner.orgId,
    name: 'web editor sign-in',
    hash: issued.hash,
    displayPrefix: issued.displayPrefix,
    scopes: options.scopes ?? ['read', 'run'],
    kind: 'browser',
    expiresAt: options.expiresAt ?? new Date(Date.now() + 3_600_000),
  });
  return { id: row.id, value: issued.value, cookie: `${SESSION_COOKIE}=${issued.value}` };
}

/** A user with a password, member of the given organization. */
export async function createPasswordUser(prisma: PrismaClient, orgId: string, role: 'owner' | 'admin' | 'member' = 'member'): Promise<{ id: string; email: string; password: string }> {
  const email = `editor-${randomUUID().slice(0, 8)}@example.test`;
  const password = `pw-${randomUUID()}`;
  const user = await new UserRepository(prisma).create({ email, name: 'Editor', passwordHash: await hashPassword(password) });
  await new MembershipRepository(prisma).create({ orgId, userId: user.id, role });
  return { id: user.id, email, password };
}
