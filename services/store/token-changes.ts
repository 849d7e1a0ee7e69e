import diagnostics from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

/**
 * How an API process learns that an access token it may hold in memory changed (revoked, new
 * expiry or scopes, deleted with its user or organization): Postgres notifies `svc_token_changes`
 * when the changing transaction commits (the trigger of prisma/functions/token-changes.sql, so no
 * code path or process can forget to), and `TokenChangeListener` LISTENs for it.
 */

/** The notification channel of prisma/functions/token-changes.sql. */
export const TOKEN_CHANGES_CHANNEL = 'svc_token_changes';

/**
 * Published in this process by a store call that revoked tokens, as soon as its statement
 * returns: the process that made the change drops its copies before it answers the caller, not
 * when the notification comes back a moment later (a revoke followed at once by a use of the
 * token, from the same client, is refused). The notification still follows for every process.
 */
export const tokensRevokedHere = diagnostics.channel('svc:store.tokens-revoked');

/** What a listener tells its owner. */
export interface TokenChangeHandlers {
  /** The row of the token with this hash changed or went. */
  changed(hash: string): void;
  /**
   * Whether changes are being heard. False: a change may be missed from now on (the connection
   * dropped), so what was learnt from the database may be stale. True: listening again; changes
   * made while deaf were not heard either.
   */
  listening(heard: boolean): void;
}

export interface TokenChangeListenerOptions {
  databaseUrl: string;
  handlers: TokenChangeHandlers;
  /** First wait before reconnecting; doubled per failure up to `maxRetryMs`. Default 500. */
  retryMs?: number;
  /** Default 10000. */
  maxRetryMs?: number;
  /** Told about each failure to connect or listen, and each dropped connection; for logging. */
  onError?: (err: unknown) => void;
}

/**
 * One dedicated connection (LISTEN needs a session of its own, not a pooled one) that stays
 * subscribed to `svc_token_changes`, reconnecting with backoff whenever it drops.
 */
export class TokenChangeListener {
  private readonly stopped = new AbortController();
  private listeningOn: pg.Client | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: TokenChangeListenerOptions) {}

  /** Starts listening in the background; `listening(true)` is told once subscribed. */
  start(): void {
    this.loop ??= this.run();
  }

  /** Stops listening and closes the connection. */
  async close(): Promise<void> {
    this.stopped.abort();
    // Only a listening connection is ended here: ending one still connecting leaves its connect()
    // unsettled in node-postgres. The loop ends that one once it has connected (or failed to).
    await this.listeningOn?.end().catch(() => undefined);
    await this.loop;
  }

  private async run(): Promise<void> {
    const { handlers, onError } = this.options;
    const first = this.options.retryMs ?? 500;
    let wait = first;
    while (!this.stopped.signal.aborted) {
      // Keep-alive probes notice a peer gone silent (a half-open socket) within about a minute;
      // the caches' own time limit bounds what is missed before that.
      const client = new pg.Client({ connectionString: this.options.databaseUrl, keepAlive: true, keepAliveInitialDelayMillis: 10_000, connectionTimeoutMillis: 5_000 });
      const ended = new Promise<void>((resolve) => {
        client.once('end', resolve);
        client.on('error', (err) => {
          onError?.(err);
          resolve();
        });
      });
      client.on('notification', (message) => {
        if (message.channel === TOKEN_CHANGES_CHANNEL && message.payload) handlers.changed(message.payload);
      });
      try {
        await client.connect();
        await client.query(`LISTEN ${TOKEN_CHANGES_CHANNEL}`);
        if (!this.stopped.signal.aborted) {
          this.listeningOn = client;
          handlers.listening(true);
          wait = first;
          await ended;
          if (!this.stopped.signal.aborted) onError?.(new Error('the token change listener lost its connection to Postgres'));
        }
      } catch (err) {
        if (!this.stopped.signal.aborted) onError?.(err);
      }
      this.listeningOn = undefined;
      handlers.listening(false);
      await client.end().catch(() => undefined);
      if (this.stopped.signal.aborted) break;
      await sleep(wait, undefined, { signal: this.stopped.signal }).catch(() => undefined);
      wait = Math.min(wait * 2, this.options.maxRetryMs ?? 10_000);
    }
    handlers.listening(false);
  }
}
