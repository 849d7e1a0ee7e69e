import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Logger } from 'pino';
import { buildServer } from '../../mcp';
import { AppError } from '../../platform/app-error';
import type { AuthContext, TokenLookup } from '../auth/auth-context';
import { identifyCaller } from '../auth/authenticate';
import type { Invoke } from '../invoke/invoke';
import { invokeToolCaller } from './invoke-tool-caller';

export interface McpRouteDeps {
  invoke: Invoke;
  tokens: TokenLookup;
  log: Logger;
  bodyLimitBytes: number;
  /** RFC 9728's protected resource metadata URL, named in the 401's `WWW-Authenticate` so MCP clients find the OAuth server. */
  resourceMetadataUrl: string;
}

/** The path of the hosted server ({mcp_url} = PUBLIC_BASE_URL + this; also under /api like every route). */
export const MCP_PATH = '/mcp';

/**
 * The hosted MCP server at `/mcp`: streamable HTTP, stateless (a new server and transport per
 * request, no session id), so any API replica serves any request of a client. The caller is the
 * request's bearer token, identified as every route identifies it; the tools call `invoke` in
 * process as that caller. Answers are SSE streams, so progress notifications reach the client
 * before the result. Other methods (GET's standalone stream, DELETE of a session) are 405: there
 * are no sessions.
 */
export function createMcpRouter(deps: McpRouteDeps): Router {
  const router = Router();
  const json = express.json({ limit: deps.bodyLimitBytes, type: () => true, strict: true });
  router.all(MCP_PATH, (_req: Request, res: Response, next: NextFunction) => {
    res.locals.route = MCP_PATH;
    res.locals.allowedMethods = ['POST'];
    next();
  });
  // The caller first: a refused one costs no parsing.
  router.post(MCP_PATH, authenticate(deps), json, async (req: Request, res: Response) => {
    const requestId = String(res.locals.requestId);
    const log = deps.log.child({ requestId });
    const caller = invokeToolCaller(deps.invoke, { auth: res.locals.auth as AuthContext, requestId, log, clientAddress: req.ip ?? req.socket.remoteAddress ?? 'unknown' });
    const server = buildServer({ caller, naming: 'hosted', onUnexpected: (err) => log.error({ err }, 'MCP tool failed unexpectedly') });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    // The client gone (or the answer sent): closing the server aborts its tool calls' signals, so a
    // followed run is let go of (the run goes on).
    res.on('close', () => void server.close().catch(() => undefined));
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  return router;
}

/** Identifies the caller as every route does; a 401 names the OAuth resource metadata (RFC 9728 §5.1). */
function authenticate(deps: McpRouteDeps) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      res.locals.auth = await identifyCaller(req, res, { what: 'the MCP server', optional: false, tokens: deps.tokens });
    } catch (err) {
      if (err instanceof AppError && err.code === 'unauthorized') {
        const invalid = req.get('authorization') ? 'error="invalid_token", ' : '';
        res.set('WWW-Authenticate', `Bearer ${invalid}resource_metadata="${deps.resourceMetadataUrl}"`);
      }
      throw err;
    }
    next();
  };
}
