import { checkDisplayName, checkEmail } from '../engine/account-rules';
import { AppError } from '../platform/app-error';
import type { User as UserRow } from './prisma-generated';
import type { Db } from './prisma-client';

/** A person who signs in to the editor and on whose behalf tokens act. */
export interface User {
  id: string;
  /** Lower-cased. */
  email: string;
  name: string;
  createdAt: Date;
}

/** A user with the stored password hash, for the editor's sign-in only. */
export interface UserCredentials extends User {
  passwordHash: string | null;
}

// Emails compare case-insensitively; storing them lower-cased lets the unique index enforce that.
function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

function toUser(row: UserRow): User {
  return { id: row.id, email: row.email, name: row.name, createdAt: row.createdAt };
}

/** Users table. */
export class UserRepository {
  constructor(private readonly db: Db) {}

  /**
   * Creates a user (`passwordHash` from `hashPassword`, or none: such a user signs in only by
   * device login approved elsewhere). A malformed email or name fails with `validation_failed`, a
   * taken email with `conflict`.
   */
  async create(input: { email: string; name: string; passwordHash?: string | null }): Promise<User> {
    const email = checkEmail(input.email);
    if (!email.ok) throw new AppError({ code: 'validation_failed', message: email.message });
    const name = checkDisplayName(input.name, 'a user name');
    if (!name.ok) throw new AppError({ code: 'validation_failed', message: name.message });
    const inserted = await this.db.user.createMany({ data: [{ email: email.value, name: name.value, passwordHash: input.passwordHash ?? null }], skipDuplicates: true });
    if (inserted.count === 0) throw new AppError({ code: 'conflict', message: `a user with the email ${email.value} exists already` });
    return toUser(await this.db.user.findUniqueOrThrow({ where: { email: email.value } }));
  }

  /** Every user, oldest first. */
  async list(): Promise<User[]> {
    const rows = await this.db.user.findMany({ orderBy: [{ createdAt: 'asc' }, { email: 'asc' }] });
    return rows.map(toUser);
  }

  async findById(id: string): Promise<User | null> {
    const row = await this.db.user.findUnique({ where: { id } });
    return row ? toUser(row) : null;
  }

  /** Finds a user by email, ignoring case. */
  async findByEmail(email: string): Promise<User | null> {
    const row = await this.db.user.findUnique({ where: { email: normalizeEmail(email) } });
    return row ? toUser(row) : null;
  }

  /** The user with the stored password hash, for password sign-in. */
  async findCredentialsByEmail(email: string): Promise<UserCredentials | null> {
    const row = await this.db.user.findUnique({ where: { email: normalizeEmail(email) } });
    return row ? { ...toUser(row), passwordHash: row.passwordHash } : null;
  }

  /** Sets the password of a user who has none; false when the user already has one (it is left as is). */
  async setPasswordHashIfNone(userId: string, passwordHash: string): Promise<boolean> {
    const updated = await this.db.user.updateMany({ where: { id: userId, passwordHash: null }, data: { passwordHash } });
    return updated.count === 1;
  }

  /** Returns the user with this email, creating it when missing; an existing one is returned unchanged. */
  async ensure(input: { email: string; name: string }): Promise<{ user: User; created: boolean }> {
    const email = normalizeEmail(input.email);
    const inserted = await this.db.user.createMany({ data: [{ email, name: input.name }], skipDuplicates: true });
    const row = await this.db.user.findUniqueOrThrow({ where: { email } });
    return { user: toUser(row), created: inserted.count === 1 };
  }
}
