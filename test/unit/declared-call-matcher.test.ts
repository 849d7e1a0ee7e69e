import { declaredCallMatcher } from '../../services/api/http/operation-routes';

/** Which requests reach a declared operation's handler (and so `invoke`), as the operation router decides. */
describe('declaredCallMatcher', () => {
  const declared = declaredCallMatcher();

  it('matches declared methods and paths, at the root and under /api, parameters filled in', () => {
    expect(declared('POST', '/v1/runs')).toBe(true);
    expect(declared('POST', '/api/v1/runs')).toBe(true);
    expect(declared('GET', '/v1/runs/3f0e7a4c-0000-4000-8000-000000000000')).toBe(true);
    expect(declared('GET', '/api/v1/runs/abc/events')).toBe(true);
    expect(declared('DELETE', '/v1/tokens/abc')).toBe(true);
    expect(declared('GET', '/editor/workflows/abc/versions/1.2.3')).toBe(true);
  });

  it('serves HEAD as GET, ignores case and one trailing slash, as Express does', () => {
    expect(declared('HEAD', '/v1/nodes')).toBe(true);
    expect(declared('GET', '/V1/Nodes')).toBe(true);
    expect(declared('GET', '/v1/nodes/')).toBe(true);
  });

  it('does not match other methods, paths, or a literal path under a parametric one', () => {
    expect(declared('DELETE', '/v1/runs')).toBe(false);
    expect(declared('GET', '/v1/runs/a/b')).toBe(false);
    expect(declared('GET', '/healthz')).toBe(false);
    expect(declared('GET', '/api/api/v1/nodes')).toBe(false);
    expect(declared('GET', '/v1/runsx')).toBe(false);
    // `/v1/runs/node` is its own path (POST only): a GET of it is 405, not `GET /v1/runs/:id`.
    expect(declared('POST', '/v1/runs/node')).toBe(true);
    expect(declared('GET', '/v1/runs/node')).toBe(false);
  });
});
