import {
  AuthenticationError,
  InsufficientCreditError,
  InvalidInputError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionError,
  RateLimitError,
  RunFailedError,
  ServerError,
  ServiceError,
} from '../../services/sdk/src';
import { errorFromResponse } from '../../services/sdk/src/errors';

function answer(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(typeof body === 'string' ? body : JSON.stringify(body), { status, headers });
}

describe('SDK error translation', () => {
  it.each([
    [400, 'validation_failed', InvalidInputError],
    [401, 'unauthorized', AuthenticationError],
    [402, 'insufficient_credit', InsufficientCreditError],
    [403, 'insufficient_scope', PermissionError],
    [404, 'not_found', NotFoundError],
    [409, 'conflict', ServiceError],
    [413, 'payload_too_large', PayloadTooLargeError],
    [429, 'rate_limited', RateLimitError],
    [500, 'internal', ServerError],
    [503, 'unavailable', ServerError],
  ])('%i %s becomes a %p with the message, code and request id', async (status, code, Class) => {
    const err = await errorFromResponse(answer(status, { error: `what to fix for ${code}`, code }, { 'x-request-id': 'req-1' }));
    expect(err).toBeInstanceOf(Class);
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ status, code, message: `what to fix for ${code}`, requestId: 'req-1' });
  });

  it('keeps the fields particular to a code', async () => {
    const credit = await errorFromResponse(answer(402, { error: 'balance too low', code: 'insufficient_credit', balanceUsd: 0.25 }));
    expect((credit as InsufficientCreditError).balanceUsd).toBe(0.25);
    const limited = await errorFromResponse(answer(429, { error: 'slow down', code: 'rate_limited' }, { 'retry-after': '7' }));
    expect((limited as RateLimitError).retryAfterSeconds).toBe(7);
    expect(limited.retryable).toBe(true);
    const invalid = await errorFromResponse(answer(400, { error: 'a; b', code: 'validation_failed', issues: [{ path: 'a', message: 'a' }] }));
    expect((invalid as InvalidInputError).issues).toEqual([{ path: 'a', message: 'a' }]);
    expect(invalid.retryable).toBe(false);
    const failed = await errorFromResponse(answer(422, { error: 'the node failed', code: 'run_failed', runId: 'r-1', runError: { code: 'provider_error', message: 'upstream 500' } }));
    expect(failed).toBeInstanceOf(RunFailedError);
    expect(failed).toMatchObject({ runId: 'r-1', code: 'provider_error', message: 'upstream 500', status: 422 });
  });

  it('reads OAuth error bodies and answers that are not JSON', async () => {
    const oauth = await errorFromResponse(answer(400, { error: 'invalid_grant', error_description: 'the device_code expired' }));
    expect(oauth).toMatchObject({ code: 'invalid_grant', message: 'the device_code expired' });
    const proxy = await errorFromResponse(answer(502, '<html>Bad Gateway</html>'));
    expect(proxy).toBeInstanceOf(ServerError);
    expect(proxy.message).toBe('HTTP 502: <html>Bad Gateway</html>');
    expect(proxy.code).toBe('internal');
  });
});
