import type { Redis } from 'ioredis';
import type { Logger } from '../platform/logger';
import type { ProviderLimitSetting } from '../platform/provider-limit-settings';

/** What the operator states of one provider (or one of its models) once, for every process: the setting as read. */
export type ProviderLimit = ProviderLimitSetting;

export interface ProviderLimiterOptions {
  /** ioredis, a shared command connection (not a subscriber). */
  redis: Redis;
  /** The deployment's Redis prefix (config.redisPrefix). */
  prefix: string;
  limits: readonly ProviderLimit[];
  /** A concurrent-call slot not renewed this long is freed (a dead process's slots come back); default 30_000. */
  leaseMs?: number;
  log: Logger;
  /** Optional: told how long each granted request waited, by limit key. */
  observer?: { waited(key: string, ms: number): void };
  /** How long a turn waits before trying Redis again after a failure; default 250 ms. */
  retryMs?: number;
}

/** One call to a provider asking for its turn. */
export interface LimitRequest {
  key: string;
  org: string;
  /** Tokens the request may use at worst (LLMs; counted against tokensPerMinute); 0 otherwise. */
  tokens: number;
  /** Take one of `concurrentCalls` slots, held until `release`. */
  lease: boolean;
  signal: AbortSignal;
}

/** A request's turn, taken. */
export interface LimitGrant {
  /** Frees the concurrent-call slot (if one was taken) and gives back `tokens - usedTokens` when `usedTokens` is known (the worst case corrected by the answer's usage). Never throws; failures are logged. */
  release(usedTokens?: number): void;
}

/** One limit key as this process sees it (for metrics). */
export interface LimitSnapshot {
  key: string;
  /** Requests of this process waiting for their turn now, and how long the oldest has waited (ms). */
  waiting: number;
  oldestWaitMs: number;
  /** Concurrent-call slots this process holds. */
  inFlight: number;
  /** What is left of each budget as last seen from Redis (null: no such limit), and what blocked the head of the queue last (null: nothing). */
  remaining: { requests: number | null; tokens: number | null; calls: number | null };
  blockedBy: 'requests' | 'tokens' | 'calls' | 'paused' | null;
}

export type BlockedBy = LimitSnapshot['blockedBy'];
