import http from 'node:http';

/** What the fake answers one `POST /oauth/token`: an RFC 8628 §3.5 error, or the token. */
export type TokenAnswer = { error: 'authorization_pending' | 'slow_down' | 'expired_token' | 'access_denied'; interval?: number } | { token: string };

/** One `POST /oauth/token` as the fake received it. */
export interface TokenPoll {
  /** `performance.now()` when it arrived: the gaps between polls are what the CLI waited. */
  at: number;
  params: Record<string, string>;
  contentType: string | undefined;
}

/**
 * A stand-in for the service's device-login endpoints (docs/auth.md, RFC 8628), for what the real
 * service cannot be made to do on demand: answer `slow_down`, or `expired_token` in seconds. It
 * speaks the same wire format (form-encoded posts, JSON answers, RFC 6749 error bodies) and serves
 * only what `svc login` calls: the two OAuth routes and `GET /v1/me` (asked once the token is saved).
 */
export class FakeOAuthServer {
  readonly polls: TokenPoll[] = [];
  /** When `POST /oauth/device/code` was answered: the first poll's wait starts there. */
  codeIssuedAt: number | undefined;
  #server: http.Server;
  #url = '';

  /** `answers` are given to the polls in order; the last one repeats. */
  constructor(private readonly answers: readonly TokenAnswer[], private readonly intervalS = 1) {
    this.#server = http.createServer((req, res) => void this.#handle(req, res));
  }

  get url(): string {
    return this.#url;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.#url = `http://127.0.0.1:${(this.#server.address() as { port: number }).port}`;
    return this;
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }

  /** Seconds between consecutive polls (the first measured from the code's issue). */
  gapsS(): number[] {
    const times = [this.codeIssuedAt ?? 0, ...this.polls.map((p) => p.at)];
    return times.slice(1).map((t, i) => (t - times[i]!) / 1000);
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let body = '';
    for await (const chunk of req) body += String(chunk);
    const json = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(value));
    const route = `${req.method} ${req.url}`;
    if (route === 'POST /oauth/device/code') {
      this.codeIssuedAt = performance.now();
      return void json(200, {
        device_code: 'fake-device-code',
        user_code: 'BCDF-GHJK',
        verification_uri: `${this.#url}/device`,
        verification_uri_complete: `${this.#url}/device?user_code=BCDF-GHJK`,
        expires_in: 600,
        interval: this.intervalS,
      });
    }
    if (route === 'POST /oauth/token') {
      this.polls.push({ at: performance.now(), params: Object.fromEntries(new URLSearchParams(body)), contentType: req.headers['content-type'] });
      const answer = this.answers[Math.min(this.polls.length, this.answers.length) - 1]!;
      if ('token' in answer) return void json(200, { access_token: answer.token, token_type: 'Bearer', expires_in: 3600, scope: 'read run' });
      return void json(400, { ...answer, error_description: `fake: ${answer.error}` });
    }
    if (route === 'GET /v1/me') {
      return void json(200, {
        user: { id: 'u1', name: 'Ada Fake', email: 'ada@example.test' },
        organization: { id: 'o1', name: 'Fake Org', slug: 'fake-org' },
        token: { id: 't1', kind: 'session', name: 'Device login (svc-cli)', displayPrefix: 'svcs_fake', scopes: ['read', 'run'], expiresAt: null },
      });
    }
    json(404, { error: { code: 'not_found', message: `the fake serves no ${route}` } });
  }
}
