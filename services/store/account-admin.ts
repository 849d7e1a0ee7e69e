/**
 * Account administration: the operations behind `npm run admin` (workers/admin.ts, `make admin`), each one
 * checked and named in its errors, over the store's repositories. The dev bootstrap issues its
 * token with {@link issuePersonalToken} too.
 */
import { MAX_TOKEN_DAYS, type Scope } from '../contract';
import { checkEmail } from '../engine/account-rules';
import { parseUsdText } from '../engine/money';
import { issueToken } from '../platform/access-token';
import { AppError } from '../platform/app-error';
import { hashPassword, passwordProblem } from '../platform/passwords';
import {
  LedgerRepository,
  MembershipRepository,
  OrganizationRepository,
  TokenRepository,
  UserRepository,
  type Db,
  type LedgerPosting,
  type Membership,
  type Organization,
  type Role,
  type TokenSummary,
  type User,
} from './index';

/** The most one `credit add` may add: a typo of a few zeros should not mint a fortune. */
export const MAX_CREDIT_MICROS = 100_000 * 1_000_000;
export const ROLES: readonly Role[] = ['owner', 'admin', 'member'];
const SCOPES: readonly Scope[] = ['read', 'run'];
const DAY_MS = 86_400_000;

function invalid(message: string): AppError {
  return new AppError({ code: 'validation_failed', message });
}

/** A new personal access token: only its hash is stored; `value` is for its owner, once. */
export async function issuePersonalToken(
  db: Db,
  input: { userId: string; orgId: string; name: string; scopes: readonly Scope[]; expiresAt?: Date | null },
): Promise<{ token: TokenSummary; value: string }> {
  const issued = issueToken('personal');
  const token = await new TokenRepository(db).create({
    userId: input.userId,
    orgId: input.orgId,
    name: input.name,
    hash: issued.hash,
    displayPrefix: issued.displayPrefix,
    scopes: input.scopes,
    kind: 'personal',
    expiresAt: input.expiresAt ?? null,
  });
  return { token, value: issued.value };
}

/** `read,run` → the scopes; anything else is refused with the allowed values. */
export function parseScopes(text: string): Scope[] {
  const parts = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = parts.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (parts.length === 0 || unknown.length > 0) throw invalid(`--scopes must be a comma-separated list of ${SCOPES.join(', ')}${unknown.length ? `; unknown: ${unknown.join(', ')}` : ''}`);
  return [...new Set(parts)] as Scope[];
}

/** The operations of the admin command over one database. */
export class AccountAdmin {
  private readonly orgs: OrganizationRepository;
  private readonly users: UserRepository;
  private readonly memberships: MembershipRepository;
  private readonly ledger: LedgerRepository;

  constructor(private readonly db: Db, private readonly now: () => Date = () => new Date()) {
    this.orgs = new OrganizationRepository(db);
    this.users = new UserRepository(db);
    this.memberships = new MembershipRepository(db);
    this.ledger = new LedgerRepository(db);
  }

  /** A new organization; its slug must be kebab-case and not a platform namespace. */
  createOrganization(slug: string, name: string): Promise<Organization> {
    return this.orgs.create({ slug, name });
  }

  listOrganizations(): Promise<Organization[]> {
    return this.orgs.list();
  }

  /** A new user, with a password (hashed with scrypt) when one is given. */
  async createUser(email: string, name: string, password?: string): Promise<User> {
    let passwordHash: string | null = null;
    if (password !== undefined) {
      const problem = passwordProblem(password);
      if (problem) throw invalid(problem);
      passwordHash = await hashPassword(password);
    }
    return this.users.create({ email, name, passwordHash });
  }

  /** Every user with the organizations they belong to. */
  async listUsers(): Promise<{ user: User; memberships: { slug: string; role: Role }[] }[]> {
    const [users, orgs, memberships] = await Promise.all([this.users.list(), this.orgs.list(), this.memberships.listAll()]);
    const slugs = new Map(orgs.map((o) => [o.id, o.slug]));
    return users.map((user) => ({
      user,
      memberships: memberships.filter((m) => m.userId === user.id).map((m) => ({ slug: slugs.get(m.orgId) ?? m.orgId, role: m.role })),
    }));
  }

  /** Adds a user to an organization; one who is a member already is refused with their role. */
  async addMember(orgSlug: string, email: string, role: string): Promise<{ organization: Organization; user: User; membership: Membership }> {
    if (!(ROLES as readonly string[]).includes(role)) throw invalid(`--role must be one of ${ROLES.join(', ')}, got "${role}"`);
    const [organization, user] = await Promise.all([this.organization(orgSlug), this.user(email)]);
    const { membership, created } = await this.memberships.ensure({ orgId: organization.id, userId: user.id, role: role as Role });
    if (!created) throw new AppError({ code: 'conflict', message: `${user.email} is a member of ${organization.slug} already (role ${membership.role})` });
    return { organization, user, membership };
  }

  /** Adds credit (a ledger entry of kind `credit`) from a decimal USD text, exactly. */
  async addCredit(orgSlug: string, usd: string, note: string): Promise<{ organization: Organization; micros: number; posting: LedgerPosting }> {
    let micros: number;
    try {
      micros = parseUsdText(usd);
    } catch (err) {
      throw invalid((err as Error).message);
    }
    if (micros <= 0) throw invalid(`the amount must be more than 0 USD, got ${usd}`);
    if (micros > MAX_CREDIT_MICROS) throw invalid(`the amount must be at most ${MAX_CREDIT_MICROS / 1_000_000} USD per credit, got ${usd}`);
    if (note.trim() === '') throw invalid('--note must say why the credit is given');
    const organization = await this.organization(orgSlug);
    const posting = await this.ledger.credit(organization.id, micros, note.trim());
    return { organization, micros, posting };
  }

  /**
   * Sets the organization's own step concurrency limit (fair scheduling, docs/scheduling.md):
   * `default` clears it (ORG_STEP_CONCURRENCY applies), `0` is no limit. Workers pick it up within
   * ORG_LIMITS_SYNC_SECONDS.
   */
  async setStepConcurrency(orgSlug: string, text: string): Promise<Organization> {
    const limit = text === 'default' ? null : Number(text);
    if (limit !== null && (!/^\d+$/.test(text) || !Number.isSafeInteger(limit) || limit > 1_000_000)) {
      throw invalid(`the limit must be a whole number from 0 (no limit) to 1000000, or "default", got "${text}"`);
    }
    const organization = await this.organization(orgSlug);
    await this.orgs.setStepConcurrency(organization.id, limit);
    return { ...organization, stepConcurrency: limit };
  }

  /** A personal access token of a member, e.g. for CI; the value is returned this once. */
  async createToken(email: string, input: { org: string; name: string; scopes: string; expiresDays?: string }): Promise<{ token: TokenSummary; value: string }> {
    const scopes = parseScopes(input.scopes);
    if (input.name.trim() === '') throw invalid('--name must say what the token is for');
    let expiresAt: Date | null = null;
    if (input.expiresDays !== undefined) {
      const days = /^\d{1,4}$/.test(input.expiresDays) ? Number(input.expiresDays) : NaN;
      if (!(days >= 1 && days <= MAX_TOKEN_DAYS)) throw invalid(`--expires-days must be a whole number from 1 to ${MAX_TOKEN_DAYS}, got "${input.expiresDays}"`);
      expiresAt = new Date(this.now().getTime() + days * DAY_MS);
    }
    const [organization, user] = await Promise.all([this.organization(input.org), this.user(email)]);
    if (!(await this.memberships.find(organization.id, user.id))) {
      throw new AppError({ code: 'forbidden', message: `${user.email} is not a member of ${organization.slug}; add them first with "member add ${organization.slug} ${user.email}"` });
    }
    return issuePersonalToken(this.db, { userId: user.id, orgId: organization.id, name: input.name.trim(), scopes, expiresAt });
  }

  private async organization(slug: string): Promise<Organization> {
    const org = await this.orgs.findBySlug(slug);
    if (!org) throw new AppError({ code: 'not_found', message: `no organization with the slug "${slug}"; see "org list"` });
    return org;
  }

  private async user(email: string): Promise<User> {
    const checked = checkEmail(email);
    if (!checked.ok) throw invalid(checked.message);
    const user = await this.users.findByEmail(checked.value);
    if (!user) throw new AppError({ code: 'not_found', message: `no user with the email ${checked.value}; see "user list"` });
    return user;
  }
}
