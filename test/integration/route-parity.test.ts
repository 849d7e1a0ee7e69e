import type { Express } from 'express';
import { OPERATIONS, ROUTES } from '../../services/contract';
import { STUDIO_PAGES } from '../../services/api/routes/studio-routes';
import { startTestService, type TestService } from '../support/service';

/**
 * Routes the app serves beside the two registries, each with why it is not a declared JSON
 * route. Nothing else may be hand-written: a JSON route outside the registries would be missing
 * from the OpenAPI document, the SDK to come, and `invoke`'s scope and limit checks.
 */
const BESIDE_THE_REGISTRIES: Record<string, string> = {
  'POST /oauth/device/code': "RFC 8628's own form-encoded request and error format (the device's side of svc login)",
  'POST /oauth/token': "RFC 8628's own form-encoded request and error format (the device polls for its session token)",
  'GET /healthz': 'liveness for orchestrators, outside the API',
  'GET /readyz': 'readiness for orchestrators, outside the API',
  'GET /metrics': 'Prometheus text format',
  'GET /v1/openapi.json': 'the document that describes the registries',
  'GET /blobs/*key': 'file downloads by signed URL: bytes, not JSON',
  'GET /v1/batches/:id/results/download': "a batch's results file by signed URL (docs/batches.md): JSON Lines or CSV, not JSON",
  'POST /hooks/providers/:provider/:key/:signature': "fal's and Replicate's job-ended webhooks, by signed URL: the providers' own bodies, never read (docs/runs.md, Provider jobs)",
  'POST /auth/sign-in': "the web editor's password sign-in: sets the HttpOnly session cookie",
  'POST /auth/sign-out': "the web editor's sign-out: clears the session cookie",
  'GET /auth/session': "the web editor's session probe: reads the cookie only",
  'POST /auth/switch': "the web editor's organization switch: rotates the HttpOnly session cookie",
  // The studio's client-side pages: each answers the studio's index.html (services/api/routes/studio-routes.ts).
  ...Object.fromEntries(STUDIO_PAGES.map((page) => [`GET ${page}`, "a page of the studio, the web editor: its index.html, whose router draws the page"])),
  'GET /device': "the studio's device-login approval page (its index.html; the page calls device.lookup, device.approve and device.deny)",
  'GET /.well-known/oauth-protected-resource': 'RFC 9728 protected-resource metadata of the hosted MCP server, where MCP clients look',
  'OPTIONS /.well-known/oauth-protected-resource': "the CORS preflight of browser-based MCP clients (the MCP SDK's handler)",
  'GET /.well-known/oauth-protected-resource/mcp': 'RFC 9728 protected-resource metadata, path-suffixed form for /mcp',
  'OPTIONS /.well-known/oauth-protected-resource/mcp': "the CORS preflight of browser-based MCP clients (the MCP SDK's handler)",
  'GET /.well-known/oauth-authorization-server': 'RFC 8414 authorization-server metadata of the MCP OAuth server (bare form)',
  'OPTIONS /.well-known/oauth-authorization-server': "the CORS preflight of browser-based MCP clients (the MCP SDK's handler)",
  'GET /.well-known/oauth-authorization-server/oauth/mcp': 'RFC 8414 authorization-server metadata at the issuer-path-suffixed URL',
  'OPTIONS /.well-known/oauth-authorization-server/oauth/mcp': "the CORS preflight of browser-based MCP clients (the MCP SDK's handler)",
  'GET /oauth/mcp/authorize': "the MCP OAuth authorization endpoint: checks the request, then the studio's consent page (HTML for people), or redirects an error to the client",
  'GET /oauth/mcp/authorize/request': "the consent page's description of a checked authorization request (client name, redirect host, scopes): OAuth's own parameters, not a declared route",
  'POST /oauth/mcp/authorize': "the consent page's decision (approve, deny): a form post answered with a redirect to the client, or HTML when refused",
  'POST /oauth/mcp/register': "RFC 7591 dynamic client registration, in its own JSON and error format (the MCP SDK's handler)",
  'OPTIONS /oauth/mcp/register': "the CORS preflight of browser-based MCP clients (the MCP SDK's handler)",
  'POST /oauth/mcp/token': "RFC 6749 token endpoint (authorization code with PKCE, refresh), form-encoded (the MCP SDK's handler)",
  'OPTIONS /oauth/mcp/token': "the CORS preflight of browser-based MCP clients (the MCP SDK's handler)",
  'POST /oauth/mcp/revoke': "RFC 7009 token revocation, form-encoded (the MCP SDK's handler)",
  'OPTIONS /oauth/mcp/revoke': "the CORS preflight of browser-based MCP clients (the MCP SDK's handler)",
  'POST /mcp': 'the hosted MCP server (streamable HTTP, JSON-RPC): its tools are the five operations, called through invoke',
};

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/** Every `METHOD path` an Express app serves (routers walked recursively; `all` marks left out). */
function servedRoutes(app: Express): Set<string> {
  const found = new Set<string>();
  const walk = (stack: Layer[]): void => {
    for (const layer of stack) {
      if (layer.route) {
        for (const [method, on] of Object.entries(layer.route.methods)) if (on && method !== '_all') found.add(`${method.toUpperCase()} ${layer.route.path}`);
      } else if (layer.handle?.stack) {
        walk(layer.handle.stack);
      }
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack);
  return found;
}

describe('every route the app serves is declared', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ env: { ROLE: 'api' } });
  });

  afterAll(async () => {
    await service?.close();
  });

  it('serves exactly the two registries and the short list of routes beside them', () => {
    const declared = [...Object.values(OPERATIONS), ...Object.values(ROUTES)].map((op) => `${op.http.method} ${op.http.path}`);
    expect(new Set(declared).size).toBe(declared.length);
    const served = servedRoutes(service.runtime.app!);
    const undeclared = [...served].filter((route) => !declared.includes(route) && !(route in BESIDE_THE_REGISTRIES));
    expect(undeclared).toEqual([]);
    const unserved = [...declared, ...Object.keys(BESIDE_THE_REGISTRIES)].filter((route) => !served.has(route));
    expect(unserved).toEqual([]);
  });

  it('keeps the five operations of the spec as the only ones that become tools', () => {
    expect(Object.keys(OPERATIONS)).toEqual(['nodes.list', 'nodes.get', 'workflows.get', 'runs.create', 'runs.node']);
    for (const name of Object.keys(ROUTES)) expect(Object.keys(OPERATIONS)).not.toContain(name);
  });
});
