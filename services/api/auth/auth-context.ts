import type { Scope, TokenKind } from '../../contract';
import type { TokenRecord } from '../../store';

export type { TokenRecord };

/** Who is calling: set by the authentication middleware, read by handlers. */
export interface AuthContext {
  tokenId: string;
  userId: string;
  orgId: string;
  scopes: readonly Scope[];
  kind: TokenKind;
}

/** Port: finds a token by the SHA-256 of its value. */
export interface TokenLookup {
  findByHash(hash: string): Promise<TokenRecord | null>;
  /** The record `findByHash` would answer at once, from memory (a cache), or undefined; optional. */
  peek?(hash: string): TokenRecord | undefined;
  /** Told about every token authentication accepts (for `last_used_at`); optional. */
  noteUsed?(tokenId: string): void;
}
