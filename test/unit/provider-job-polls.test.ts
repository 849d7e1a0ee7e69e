import { ProviderJobPolls } from '../../services/runs/steps/provider-job-polls';
import { providerJobKey, ProviderWebhookUrls } from '../../services/platform/provider-webhook-urls';

/** Settles pending promise callbacks after the fake clock moved. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('ProviderJobPolls: the parked jobs of a worker on one timer', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  it('ends each wait when its poll is due, on one timer armed only while jobs wait', async () => {
    const polls = new ProviderJobPolls();
    const done: string[] = [];
    // Each step waits under its own run's signal.
    for (let i = 0; i < 500; i++) void polls.wait(`job-${i}`, 1000 + (i % 5) * 100, new AbortController().signal).then(() => done.push(`job-${i}`));
    expect(polls.waiting).toBe(500);
    expect(polls.armed).toBe(true);
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(990);
    await flush();
    expect(done).toHaveLength(0);
    jest.advanceTimersByTime(40);
    await flush();
    // The first hundred (1,000 ms) are due, within the timer's 25 ms grain; the rest still wait.
    expect(done).toHaveLength(100);
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(500);
    await flush();
    expect(done).toHaveLength(500);
    expect(polls.waiting).toBe(0);
    expect(polls.armed).toBe(false);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('brings a job\'s poll forward when its provider says it ended, and keeps an early word for its next wait', async () => {
    const polls = new ProviderJobPolls();
    const never = new AbortController().signal;
    let first = false;
    void polls.wait('a', 60_000, never).then(() => (first = true));
    let other = false;
    void polls.wait('b', 60_000, never).then(() => (other = true));
    polls.wake('a');
    await flush();
    expect({ first, other }).toEqual({ first: true, other: false });
    // The word arrives between two waits (the step was asking the provider): its next wait ends at once.
    polls.wake('c');
    let third = false;
    void polls.wait('c', 60_000, never).then(() => (third = true));
    await flush();
    expect(third).toBe(true);
    // Used once: the wait after it is a full one.
    let fourth = false;
    void polls.wait('c', 60_000, never).then(() => (fourth = true));
    await flush();
    expect(fourth).toBe(false);
    expect(polls.woken).toBe(2);
    polls.wake('b');
    polls.wake('c');
    await flush();
    expect({ other, fourth }).toEqual({ other: true, fourth: true });
    expect(polls.armed).toBe(false);
  });

  it('forgets an early word after a minute', async () => {
    const polls = new ProviderJobPolls();
    polls.wake('late');
    jest.advanceTimersByTime(61_000);
    let ended = false;
    void polls.wait('late', 5_000, new AbortController().signal).then(() => (ended = true));
    await flush();
    expect(ended).toBe(false);
    jest.advanceTimersByTime(5_100);
    await flush();
    expect(ended).toBe(true);
  });

  it('rejects a wait with the reason its signal aborts with, and disarms the timer', async () => {
    const polls = new ProviderJobPolls();
    const controller = new AbortController();
    const waited = polls.wait('x', 10_000, controller.signal);
    const reason = new Error('the run stopped');
    controller.abort(reason);
    await expect(waited).rejects.toBe(reason);
    expect(polls.waiting).toBe(0);
    expect(polls.armed).toBe(false);
    await expect(polls.wait('x', 10, controller.signal)).rejects.toBe(reason);
  });
});

describe('ProviderWebhookUrls: the URLs providers call back', () => {
  const urls = new ProviderWebhookUrls({ baseUrl: 'https://svc.example.com/', secret: 'a-webhook-secret-of-at-least-32-characters' });

  it('signs a URL per provider and step, and verifies only what it signed', () => {
    const key = providerJobKey('run-1', 'draw');
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect(providerJobKey('run-1', 'draw')).toBe(key);
    expect(providerJobKey('run-1', 'draw2')).not.toBe(key);
    const url = urls.urlFor('fal', key);
    const match = /^https:\/\/svc\.example\.com\/hooks\/providers\/fal\/([0-9a-f]{32})\/([A-Za-z0-9_-]+)$/.exec(url);
    expect(match?.[1]).toBe(key);
    const signature = match![2]!;
    expect(urls.verify('fal', key, signature)).toBe(true);
    expect(urls.verify('replicate', key, signature)).toBe(false);
    expect(urls.verify('fal', providerJobKey('run-2', 'draw'), signature)).toBe(false);
    expect(urls.verify('fal', key, `${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`)).toBe(false);
    expect(urls.verify('fal', key, '')).toBe(false);
    expect(urls.verify('fal', 'not-a-key', signature)).toBe(false);
    const other = new ProviderWebhookUrls({ baseUrl: 'https://svc.example.com', secret: 'another-secret-of-at-least-32-characters!' });
    expect(other.verify('fal', key, signature)).toBe(false);
  });

  it('refuses a secret shorter than 32 characters', () => {
    expect(() => new ProviderWebhookUrls({ baseUrl: 'https://svc.example.com', secret: 'short' })).toThrow(/at least 32/);
  });
});
