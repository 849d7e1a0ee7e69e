import request from 'supertest';
import { startTestService, type TestService } from '../support/service';

describe('a workflow address with an unencoded "/" in the path', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ env: { ROLE: 'api' } });
  });

  afterAll(async () => {
    await service?.close();
  });

  it.each(['/v1/workflows/dev/adder', '/api/v1/workflows/dev/adder@1.0.0'])('answers %s with a 404 saying the "/" must be written %%2F', async (path) => {
    const res = await request(service.url).get(path).expect(404);
    expect(res.body).toEqual({
      code: 'not_found',
      error: `no route for GET ${path}; a workflow address's "/" must be written %2F in the path, e.g. /v1/workflows/dev%2Fadder`,
    });
  });

  it('still says where the API lives for other unknown paths', async () => {
    const res = await request(service.url).get('/v2/workflows/dev/adder').expect(404);
    expect(res.body.error).toBe('no route for GET /v2/workflows/dev/adder; the API lives under /v1 (or /api/v1)');
  });
});
