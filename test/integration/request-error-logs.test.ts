import http from 'node:http';
import zlib from 'node:zlib';
import pino from 'pino';
import { eventually } from '../support/eventually';
import { bearer, startTestService, type TestService } from '../support/service';

/**
 * A body the client got wrong (not the compression its `Content-Encoding` names, not
 * JSON, too many form fields, an encoding nobody supports) is a 4xx saying what is wrong, on the
 * API's routes and on the OAuth endpoints alike, and is logged at warn, never at error: operators
 * alert on error-level lines, which are for the service's own failures (5xx).
 */

interface LogLine {
  level: number;
  msg: string;
  req?: { id?: string };
  res?: { statusCode?: number };
  /** The error handler's own line names the request so. */
  requestId?: string;
}

const WARN = 40;
const ERROR = 50;

/** A raw request (fetch cannot send a lying Content-Encoding): its status and JSON body. */
function rawPost(url: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { ...headers, 'Content-Length': String(body.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown> }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const FORM = 'application/x-www-form-urlencoded';
const JSON_TYPE = 'application/json';

describe('requests with unreadable bodies', () => {
  let service: TestService;
  const lines: LogLine[] = [];
  let sent = 0;

  beforeAll(async () => {
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
    service = await startTestService({ log });
  }, 60_000);

  afterAll(async () => {
    await service?.close();
  });

  /** Posts `body` with `headers` to `path`; answers the status, the body, and the request's log line once written. */
  async function send(path: string, headers: Record<string, string>, body: Buffer) {
    const id = `unreadable-body-${++sent}`;
    const answer = await rawPost(`${service.url}${path}`, { ...headers, 'X-Request-Id': id }, body);
    const line = await eventually(() => lines.find((l) => l.req?.id === id), { what: `the log line of ${path} (${id})` });
    // What either error format says: RFC 6749's `error_description`, or the service's `error`.
    const message = String(answer.body.error_description ?? answer.body.error ?? '');
    return { ...answer, message, line };
  }

  const notBrotli = Buffer.from('grant_type=refresh_token&client_id=x&refresh_token=y');
  const notGzip = Buffer.from(JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'] }));

  const cases: { name: string; path: string; headers: () => Record<string, string>; body: Buffer; status: number; error?: string; message: RegExp }[] = [
    { name: 'MCP OAuth token endpoint, br body that is not brotli', path: '/oauth/mcp/token', headers: () => ({ 'Content-Type': FORM, 'Content-Encoding': 'br' }), body: notBrotli, status: 400, error: 'invalid_request', message: /Content-Encoding "br" but is not br data/ },
    { name: 'MCP OAuth token endpoint, gzip body that is not gzip', path: '/oauth/mcp/token', headers: () => ({ 'Content-Type': FORM, 'Content-Encoding': 'gzip' }), body: notBrotli, status: 400, error: 'invalid_request', message: /Content-Encoding "gzip" but is not gzip data/ },
    { name: 'MCP OAuth registration, gzip body that is not gzip', path: '/oauth/mcp/register', headers: () => ({ 'Content-Type': JSON_TYPE, 'Content-Encoding': 'gzip' }), body: notGzip, status: 400, error: 'invalid_request', message: /Content-Encoding "gzip" but is not gzip data/ },
    { name: 'MCP OAuth registration, deflate body that is not deflate', path: '/oauth/mcp/register', headers: () => ({ 'Content-Type': JSON_TYPE, 'Content-Encoding': 'deflate' }), body: notGzip, status: 400, error: 'invalid_request', message: /Content-Encoding "deflate" but is not deflate data/ },
    { name: 'MCP OAuth registration, brotli body that is not JSON', path: '/oauth/mcp/register', headers: () => ({ 'Content-Type': JSON_TYPE, 'Content-Encoding': 'br' }), body: zlib.brotliCompressSync('{"redirect_uris": [}'), status: 400, error: 'invalid_request', message: /not valid JSON/ },
    { name: 'MCP OAuth token endpoint, more form fields than allowed', path: '/oauth/mcp/token', headers: () => ({ 'Content-Type': FORM }), body: Buffer.from(Array.from({ length: 1001 }, (_, i) => `f${i}=1`).join('&')), status: 413, error: 'invalid_request', message: /too many form parameters/ },
    { name: 'MCP OAuth revocation, an unknown Content-Encoding', path: '/oauth/mcp/revoke', headers: () => ({ 'Content-Type': FORM, 'Content-Encoding': 'compress' }), body: Buffer.from('token=x'), status: 415, error: 'invalid_request', message: /unsupported content encoding "compress"/ },
    { name: 'device-flow token endpoint, br body that is not brotli', path: '/oauth/token', headers: () => ({ 'Content-Type': FORM, 'Content-Encoding': 'br' }), body: notBrotli, status: 400, message: /Content-Encoding "br" but is not br data/ },
    { name: 'POST /v1/runs, br body that is not brotli', path: '/v1/runs', headers: () => ({ ...bearer(service.account.token), 'Content-Type': JSON_TYPE, 'Content-Encoding': 'br' }), body: notGzip, status: 400, message: /Content-Encoding "br" but is not br data/ },
    { name: 'POST /v1/runs, gzip body that is not gzip', path: '/v1/runs', headers: () => ({ ...bearer(service.account.token), 'Content-Type': JSON_TYPE, 'Content-Encoding': 'gzip' }), body: notGzip, status: 400, message: /Content-Encoding "gzip" but is not gzip data/ },
    { name: 'POST /v1/runs, gzip body that is not JSON', path: '/v1/runs', headers: () => ({ ...bearer(service.account.token), 'Content-Type': JSON_TYPE, 'Content-Encoding': 'gzip' }), body: zlib.gzipSync('{"workflow": '), status: 400, message: /not valid JSON/ },
    { name: 'POST /v1/runs, an unknown Content-Encoding', path: '/v1/runs', headers: () => ({ ...bearer(service.account.token), 'Content-Type': JSON_TYPE, 'Content-Encoding': 'compress' }), body: notGzip, status: 415, message: /unsupported content encoding "compress"/ },
    { name: 'POST /mcp, br body that is not brotli', path: '/mcp', headers: () => ({ ...bearer(service.account.token), 'Content-Type': JSON_TYPE, Accept: 'application/json, text/event-stream', 'Content-Encoding': 'br' }), body: notGzip, status: 400, message: /Content-Encoding "br" but is not br data/ },
  ];

  it.each(cases)('$name: $status saying what is wrong, logged at warn', async (c) => {
    const answer = await send(c.path, c.headers(), c.body);
    expect({ status: answer.status, message: answer.message }).toEqual({ status: c.status, message: expect.stringMatching(c.message) });
    // The OAuth endpoints answer in RFC 6749's format.
    if (c.error) expect(answer.body.error).toBe(c.error);
    expect({ level: answer.line.level, msg: answer.line.msg, status: answer.line.res?.statusCode }).toEqual({ level: WARN, msg: 'request completed', status: c.status });
  });

  it('logs nothing at error level for any of them', () => {
    expect(sent).toBe(cases.length);
    expect(lines.filter((l) => l.level >= ERROR).map((l) => ({ level: l.level, msg: l.msg, request: l.req?.id ?? l.requestId, status: l.res?.statusCode }))).toEqual([]);
  });
});
