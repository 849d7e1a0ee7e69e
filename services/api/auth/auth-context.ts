import type { Scope } from '../../contract';

/** Who is calling: set by the authentication middleware, read by handlers. */
export interface AuthContext {
  tokenId: string;
  userId: string;
  orgId: string;
  scopes: readonly Scope[];
  kind: 'personal' | 'session' | 'browser';
}

/** A stored token as the authentication middleware needs it (the store's token repository provides it). */
export interface TokenRecord {
  id: string;
  userId: string;
  orgId: string;
  scopes: readonly string[];
  kind: 'personal' | 'session' | 'browser';
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** Port: finds a token by the SHA-256 of its value. */
export interface TokenLookup {
  findByHash(hash: string): Promise<TokenRecord | null>;
  /** Told about every token authentication accepts (for `last_used_at`); optional. */
  noteUsed?(tokenId: string): void;
}
