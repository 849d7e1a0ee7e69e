import { crossOriginProblem } from '../../services/api/auth/csrf';
import { clearedSessionCookie, sessionCookie, sitePolicyOf } from '../../services/api/auth/session-cookie';

const OWN = 'http://127.0.0.1:8080';

describe('the CSRF guard of cookie-authenticated requests', () => {
  it.each(['GET', 'HEAD', 'OPTIONS', 'get'])('lets %s through from anywhere', (method) => {
    expect(crossOriginProblem(method, { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }, OWN)).toBeNull();
  });

  it.each([
    ['same origin, fetch metadata same-origin', { origin: OWN, 'sec-fetch-site': 'same-origin' }],
    ['same origin, no fetch metadata', { origin: OWN }],
    ['same origin written with a trailing slash', { origin: `${OWN}/` }],
    ['no Origin, Referer from the service', { referer: `${OWN}/editor/flows?x=1` }],
    ['no Origin, Referer from the service, fetch metadata same-origin', { referer: `${OWN}/`, 'sec-fetch-site': 'same-origin' }],
  ])('lets a mutation through: %s', (_what, headers) => {
    expect(crossOriginProblem('POST', headers, OWN)).toBeNull();
  });

  it.each([
    ['Sec-Fetch-Site cross-site', { origin: OWN, 'sec-fetch-site': 'cross-site' }, 'Sec-Fetch-Site is "cross-site"'],
    ['Sec-Fetch-Site same-site (a sibling subdomain)', { origin: OWN, 'sec-fetch-site': 'same-site' }, 'Sec-Fetch-Site is "same-site"'],
    ['Sec-Fetch-Site none (typed or bookmarked)', { origin: OWN, 'sec-fetch-site': 'none' }, 'Sec-Fetch-Site is "none"'],
    ['another origin', { origin: 'https://evil.example' }, 'Origin is "https://evil.example"'],
    ['another port', { origin: 'http://127.0.0.1:8081' }, 'Origin is "http://127.0.0.1:8081"'],
    ['https instead of http', { origin: 'https://127.0.0.1:8080' }, 'Origin is "https://127.0.0.1:8080"'],
    ['Origin null (sandboxed frame)', { origin: 'null' }, 'Origin is "null"'],
    ['a foreign Referer without Origin', { referer: 'https://evil.example/page' }, 'its Referer ("https://evil.example/page")'],
    ['a Referer that is not a URL', { referer: 'nonsense' }, 'its Referer ("nonsense")'],
    ['neither Origin nor Referer', {}, 'must carry an Origin (or Referer) header'],
    ['only Sec-Fetch-Site same-origin', { 'sec-fetch-site': 'same-origin' }, 'must carry an Origin (or Referer) header'],
  ])('refuses a mutation with %s', (_what, headers, reason) => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) expect(crossOriginProblem(method, headers, OWN)).toContain(reason);
  });

  it('refuses every mutation when the service knows no origin of its own', () => {
    expect(crossOriginProblem('POST', { origin: OWN }, null)).toContain('no public base URL');
  });
});

describe('the session cookie', () => {
  it('takes the origin from the public base URL and is Secure only over https', () => {
    expect(sitePolicyOf('http://127.0.0.1:8080')).toEqual({ origin: 'http://127.0.0.1:8080', secure: false });
    expect(sitePolicyOf('https://Studio.Example.com/api')).toEqual({ origin: 'https://studio.example.com', secure: true });
    expect(sitePolicyOf('https://studio.example.com:443/api')).toEqual({ origin: 'https://studio.example.com', secure: true });
  });

  it('is HttpOnly, SameSite=Lax, Path=/, with Max-Age, and Secure when asked', () => {
    const plain = sessionCookie('svcb_abc', { secure: false, maxAgeSeconds: 3600 });
    expect(plain).toBe('svc_session=svcb_abc; Max-Age=3600; Path=/; HttpOnly; SameSite=Lax');
    const secure = sessionCookie('svcb_abc', { secure: sitePolicyOf('https://studio.example.com').secure, maxAgeSeconds: 3600 });
    expect(secure.split('; ')).toEqual(expect.arrayContaining(['svc_session=svcb_abc', 'HttpOnly', 'SameSite=Lax', 'Path=/', 'Max-Age=3600', 'Secure']));
  });

  it('is cleared with an empty value, Max-Age=0 and the same attributes', () => {
    const cleared = clearedSessionCookie({ secure: true });
    expect(cleared.split('; ')).toEqual(expect.arrayContaining(['svc_session=', 'Max-Age=0', 'Path=/', 'HttpOnly', 'SameSite=Lax', 'Secure']));
  });
});
