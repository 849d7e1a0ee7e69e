import { CliError, EXIT } from '../../services/cli/src/cli-error';
import { CLIENT_ID, DeviceLogin, type DeviceCode } from '../../services/cli/src/device-login';

/**
 * The CLI's polling of `POST /oauth/token` (RFC 8628 §3.4–3.5) with the sleep injected: the waits
 * it asks for are recorded instead of waited, and fetch answers from a script, so the intervals
 * are checked exactly and in no time. test/integration/cli-login.test.ts drives the built CLI.
 */
describe('svc login: polling for the token', () => {
  const BASE = 'http://svc.test';
  const code = (interval?: number): DeviceCode => ({ device_code: 'dev-code', user_code: 'BCDF-GHJK', verification_uri: `${BASE}/device`, expires_in: 600, interval });
  let requests: { url: string; contentType: string | null; params: Record<string, string> }[];
  let waits: number[];
  const sleep = (ms: number) => {
    waits.push(ms);
    return Promise.resolve();
  };

  /** fetch answers the polls with these bodies in order (status 200 for a token, else 400, as RFC 6749 §5.2). */
  function answerPolls(...bodies: Record<string, unknown>[]) {
    jest.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
      const headers = new Headers(init?.headers);
      requests.push({ url: String(input), contentType: headers.get('content-type'), params: Object.fromEntries(new URLSearchParams(String(init?.body))) });
      const body = bodies[Math.min(requests.length, bodies.length) - 1]!;
      return new Response(JSON.stringify(body), { status: 'access_token' in body ? 200 : 400, headers: { 'content-type': 'application/json' } });
    });
  }

  beforeEach(() => {
    requests = [];
    waits = [];
  });
  afterEach(() => jest.restoreAllMocks());

  it('keeps the interval on authorization_pending and adds 5 s for each slow_down, for that poll and all later ones', async () => {
    answerPolls(
      { error: 'authorization_pending' },
      { error: 'slow_down' },
      { error: 'authorization_pending' },
      { error: 'slow_down' },
      { error: 'authorization_pending' },
      { access_token: 'svcs_new', token_type: 'Bearer', scope: 'read run' },
    );
    const granted = await new DeviceLogin(BASE, sleep).poll(code(1));
    expect(granted.access_token).toBe('svcs_new');
    // Each wait comes before its poll: 1 s, 1 s, then 6 s after the first slow_down, 11 s after the second.
    expect(waits).toEqual([1000, 1000, 6000, 6000, 11000, 11000]);
    expect(requests).toHaveLength(6);
    for (const request of requests) {
      expect(request).toEqual({
        url: `${BASE}/oauth/token`,
        contentType: 'application/x-www-form-urlencoded',
        params: { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'dev-code', client_id: CLIENT_ID },
      });
    }
  });

  it('takes an interval a slow_down names when it is longer, and 5 s when the code names none', async () => {
    answerPolls({ error: 'slow_down', interval: 30 }, { access_token: 'svcs_new', token_type: 'Bearer' });
    await new DeviceLogin(BASE, sleep).poll(code());
    expect(waits).toEqual([5000, 30000]);
  });

  it('stops at expired_token with the auth exit code and says to log in again', async () => {
    answerPolls({ error: 'authorization_pending' }, { error: 'expired_token', error_description: 'the device code expired' });
    const failure = await new DeviceLogin(BASE, sleep).poll(code(2)).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(CliError);
    expect(failure).toMatchObject({ code: 'expired_token', exitCode: EXIT.auth, message: 'the code expired before it was approved: run `svc login` again' });
    expect(waits).toEqual([2000, 2000]);
  });

  it('stops at access_denied with the auth exit code', async () => {
    answerPolls({ error: 'access_denied' });
    await expect(new DeviceLogin(BASE, sleep).poll(code(1))).rejects.toMatchObject({ code: 'access_denied', exitCode: EXIT.auth, message: expect.stringContaining('denied') });
    expect(requests).toHaveLength(1);
  });

  it('stops when the code\'s own lifetime has passed, without another poll', async () => {
    answerPolls({ error: 'authorization_pending' });
    const expired = { ...code(1), expires_in: 0 };
    // The injected sleep does not move the clock; a real one does: let 5 ms pass.
    const realTime = (ms: number) => {
      waits.push(ms);
      return new Promise<void>((resolve) => setTimeout(resolve, 5));
    };
    await expect(new DeviceLogin(BASE, realTime).poll(expired)).rejects.toMatchObject({ code: 'expired_token', exitCode: EXIT.auth });
    expect(requests).toHaveLength(0);
  });
});
