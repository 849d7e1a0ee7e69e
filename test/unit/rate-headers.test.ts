import { readRateHeaders, retryAfterMs } from '../../services/nodes';

/** Rate-limit headers as OpenAI and Anthropic send them, and nonsense that must not be obeyed. */

const NOW = Date.parse('2025-06-01T12:00:00Z');
const read = (headers: Record<string, string>) => readRateHeaders(new Headers(headers), NOW);

describe('readRateHeaders', () => {
  it("reads OpenAI's budgets with their Go-style reset durations", () => {
    // A 200 from chat completions (https://platform.openai.com/docs/guides/rate-limits, headers).
    expect(
      read({
        'x-ratelimit-limit-requests': '60',
        'x-ratelimit-limit-tokens': '150000',
        'x-ratelimit-remaining-requests': '59',
        'x-ratelimit-remaining-tokens': '149984',
        'x-ratelimit-reset-requests': '1s',
        'x-ratelimit-reset-tokens': '6m0s',
      }),
    ).toEqual({ requests: { remaining: 59, resetMs: 1000 }, tokens: { remaining: 149984, resetMs: 360_000 }, ignored: [] });
  });

  it.each([
    ['20ms', 20],
    ['0h2m3.5s', 123_500],
    ['1h', 3_600_000],
    ['59.123s', 59_123],
    ['2m', 120_000],
    ['0s', 0],
  ])('reads the duration %s', (reset, ms) => {
    expect(read({ 'x-ratelimit-remaining-requests': '3', 'x-ratelimit-reset-requests': reset }).requests).toEqual({ remaining: 3, resetMs: ms });
  });

  it("reads Anthropic's budgets with their RFC 3339 resets, the tightest token kind winning", () => {
    // A 200 from the Messages API (https://docs.anthropic.com/en/api/rate-limits, response headers).
    expect(
      read({
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '49',
        'anthropic-ratelimit-requests-reset': '2025-06-01T12:00:01Z',
        'anthropic-ratelimit-tokens-limit': '90000',
        'anthropic-ratelimit-tokens-remaining': '89000',
        'anthropic-ratelimit-tokens-reset': '2025-06-01T12:00:05Z',
        'anthropic-ratelimit-input-tokens-remaining': '39000',
        'anthropic-ratelimit-input-tokens-reset': '2025-06-01T12:00:02.500Z',
        'anthropic-ratelimit-output-tokens-remaining': '7900',
        'anthropic-ratelimit-output-tokens-reset': '2025-06-01T12:00:03+00:00',
      }),
    ).toEqual({ requests: { remaining: 49, resetMs: 1000 }, tokens: { remaining: 7900, resetMs: 3000 }, ignored: [] });
  });

  it('takes a reset already past as 0', () => {
    expect(read({ 'anthropic-ratelimit-requests-remaining': '0', 'anthropic-ratelimit-requests-reset': '2025-06-01T11:59:00Z' }).requests).toEqual({ remaining: 0, resetMs: 0 });
  });

  it('reads Retry-After in seconds or as an HTTP date, and prefers retry-after-ms', () => {
    expect(read({ 'retry-after': '20' })).toEqual({ retryAfterMs: 20_000, ignored: [] });
    expect(read({ 'retry-after': '1.5' }).retryAfterMs).toBe(1500);
    expect(read({ 'retry-after': 'Sun, 01 Jun 2025 12:00:30 GMT' }).retryAfterMs).toBe(30_000);
    expect(read({ 'retry-after': 'Sun, 01 Jun 2025 11:00:00 GMT' }).retryAfterMs).toBe(0);
    expect(read({ 'retry-after': '2', 'retry-after-ms': '1250' }).retryAfterMs).toBe(1250);
    expect(read({ 'retry-after-ms': '812.4' }).retryAfterMs).toBe(813);
  });

  it('gives no budget without both its remaining count and its reset, and lists nothing absent', () => {
    expect(read({ 'x-ratelimit-remaining-requests': '5' })).toEqual({ ignored: [] });
    expect(read({ 'x-ratelimit-reset-tokens': '1s' })).toEqual({ ignored: [] });
    expect(read({})).toEqual({ ignored: [] });
  });

  it.each([
    ['retry-after', '-3', 'negative'],
    ['retry-after', 'soon', 'neither seconds nor an HTTP date'],
    ['retry-after', '86400', 'more than an hour away'],
    ['retry-after', 'Mon, 02 Jun 2025 12:00:00 GMT', 'more than an hour away'],
    ['retry-after-ms', '-100', 'negative'],
    ['retry-after-ms', 'NaN', 'not a number of milliseconds'],
    ['retry-after-ms', '3600001', 'more than an hour away'],
    ['x-ratelimit-reset-requests', '-1s', 'negative'],
    ['x-ratelimit-reset-requests', '1 second', 'not a duration such as 1s, 6m0s or 20ms'],
    ['x-ratelimit-reset-requests', '', 'not a duration such as 1s, 6m0s or 20ms'],
    ['x-ratelimit-reset-requests', '2h', 'more than an hour away'],
    ['x-ratelimit-reset-requests', '1h2m3.5s', 'more than an hour away'],
    ['x-ratelimit-remaining-requests', '-1', 'negative'],
    ['x-ratelimit-remaining-requests', '12.5', 'not a whole number'],
    ['x-ratelimit-remaining-requests', 'many', 'not a whole number'],
    ['x-ratelimit-remaining-requests', '1000000001', 'above 1000000000'],
    ['anthropic-ratelimit-requests-reset', '1717243200', 'not an RFC 3339 time'],
    ['anthropic-ratelimit-requests-reset', '2025-06-01T12:00:01', 'not an RFC 3339 time'],
    ['anthropic-ratelimit-requests-reset', '2025-06-02T12:00:00Z', 'more than an hour away'],
  ])('ignores %s: %j (%s), listing it, and obeys nothing of it', (name, value, why) => {
    const good: Record<string, string> = name.startsWith('anthropic') ? { 'anthropic-ratelimit-requests-remaining': '4', 'anthropic-ratelimit-requests-reset': '2025-06-01T12:00:01Z' } : { 'x-ratelimit-remaining-requests': '4', 'x-ratelimit-reset-requests': '1s' };
    const advice = read({ ...good, [name]: value });
    expect(advice.ignored).toEqual([`${name}: ${value} (${why})`]);
    expect(advice.retryAfterMs).toBeUndefined();
    // The budget whose half is nonsense is not given at all.
    expect(advice.requests).toEqual(name.includes('requests') ? undefined : { remaining: 4, resetMs: 1000 });
  });

  it('keeps the sound budgets of an answer whose other headers are nonsense', () => {
    const advice = read({
      'x-ratelimit-remaining-requests': '-5',
      'x-ratelimit-reset-requests': '1s',
      'x-ratelimit-remaining-tokens': '1000',
      'x-ratelimit-reset-tokens': '30s',
      'retry-after': '99999',
    });
    expect(advice).toEqual({ tokens: { remaining: 1000, resetMs: 30_000 }, ignored: ['retry-after: 99999 (more than an hour away)', 'x-ratelimit-remaining-requests: -5 (negative)'] });
  });

  it('uses a sound Anthropic token kind when another is nonsense', () => {
    const advice = read({
      'anthropic-ratelimit-input-tokens-remaining': 'lots',
      'anthropic-ratelimit-input-tokens-reset': '2025-06-01T12:00:02Z',
      'anthropic-ratelimit-output-tokens-remaining': '800',
      'anthropic-ratelimit-output-tokens-reset': '2025-06-01T12:00:04Z',
    });
    expect(advice).toEqual({ tokens: { remaining: 800, resetMs: 4000 }, ignored: ['anthropic-ratelimit-input-tokens-remaining: lots (not a whole number)'] });
  });
});

describe('retryAfterMs (the HTTP client\'s reading of Retry-After)', () => {
  it('reads seconds and HTTP dates, and nothing else', () => {
    expect(retryAfterMs('3', NOW)).toBe(3000);
    expect(retryAfterMs('Sun, 01 Jun 2025 12:00:10 GMT', NOW)).toBe(10_000);
    expect(retryAfterMs(null, NOW)).toBeUndefined();
    expect(retryAfterMs('soon', NOW)).toBeUndefined();
  });
});
