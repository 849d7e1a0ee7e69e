import { randomUUID } from 'node:crypto';
import { issueToken } from '../../services/platform/access-token';
import { TokenRepository, type PrismaClient } from '../../services/store';

export interface SeededAccount {
  orgId: string;
  /** The organization's slug, the first half of its workflows' addresses. */
  orgSlug: string;
  userId: string;
  tokenId: string | null;
  /** The full token value, as its owner would have received it. */
  token: string;
}

export interface SeedOptions {
  /** Organization slug; made unique with a suffix. */
  slug: string;
  scopes: string[];
  expiresAt?: Date | null;
  revokedAt?: Date | null;
  /** false: issue a well-formed token but do not store it (an unknown token). */
  storeToken?: boolean;
  balanceMicros?: number;
}

/** Creates an organization, a user who owns it, and a personal access token. */
export async function seedAccount(prisma: PrismaClient, options: SeedOptions): Promise<SeededAccount> {
  const suffix = randomUUID().slice(0, 8);
  const org = await prisma.organization.create({
    data: { slug: `${options.slug}-${suffix}`, name: options.slug, balanceMicros: BigInt(options.balanceMicros ?? 0) },
  });
  const user = await prisma.user.create({ data: { email: `${options.slug}-${suffix}@example.test`, name: options.slug } });
  await prisma.membership.create({ data: { userId: user.id, orgId: org.id, role: 'owner' } });
  const issued = issueToken('personal');
  if (options.storeToken === false) return { orgId: org.id, orgSlug: org.slug, userId: user.id, tokenId: null, token: issued.value };
  const token = await prisma.accessToken.create({
    data: {
      userId: user.id,
      orgId: org.id,
      name: 'test token',
      kind: 'personal',
      displayPrefix: issued.displayPrefix,
      tokenHash: issued.hash,
      scopes: options.scopes,
      expiresAt: options.expiresAt ?? null,
      revokedAt: options.revokedAt ?? null,
    },
  });
  return { orgId: org.id, orgSlug: org.slug, userId: user.id, tokenId: token.id, token: issued.value };
}

/** A device-login session token (`svcs_`) of the account's user, valid a day: what `POST /v1/tokens` needs. */
export async function issueSessionToken(prisma: PrismaClient, account: SeededAccount): Promise<string> {
  const token = issueToken('session');
  await new TokenRepository(prisma).create({
    userId: account.userId,
    orgId: account.orgId,
    name: 'svc login',
    hash: token.hash,
    displayPrefix: token.displayPrefix,
    scopes: ['read', 'run'],
    kind: 'session',
    expiresAt: new Date(Date.now() + 86_400_000),
  });
  return token.value;
}
