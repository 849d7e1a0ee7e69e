import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Logger } from 'pino';
import { buildServer } from '../../mcp';
import { AppError } from '../../platform/app-error';
import type { AuthContext, TokenLookup } from '../auth/auth-context';
import { identifyCaller } from '../auth/authenticate';
import type { Invoke } from '../invoke/invoke';
import { invokeToolCaller } from './invoke-tool-caller';
import { isRequestId, type McpCancellations, type McpRequestId } from './mcp-cancellations';

export interface McpRouteDeps {
  invoke: Invoke;
  tokens: TokenLookup;
  log: Logger;
  bodyLimitBytes: number;
  /** RFC 9728's protected resource metadata URL, named in the 401's `WWW-Authenticate` so MCP clients find the OAuth server. */
  resourceMetadataUrl: string;
  /** Where a `notifications/cancelled` is published and a running `tools/call` is found (any replica). */
  cancellations: McpCancellations;
}

/** The path of the hosted server ({mcp_url} = PUBLIC_BASE_URL + this; also under /api like every route). */
export const MCP_PATH = '/mcp';

/**
 * The hosted MCP server at `/mcp`: streamable HTTP, stateless (a new server and transport per
 * request, no session id), so any API replica serves any request of a client. The caller is the
 * request's bearer token, identified as every route identifies it; the tools call `invoke` in
 * process as that caller. Answers are SSE streams, so progress notifications reach the client
 * before the result. Other methods (GET's standalone stream, DELETE of a session) are 405: there
 * are no sessions. A `notifications/cancelled` is published to every replica, and the one running
 * that caller's call cancels it (see {@link McpCancellations}).
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
    const auth = res.locals.auth as AuthContext;
    const messages: unknown[] = Array.isArray(req.body) ? req.body : [req.body];
    // Not awaited: the command connection queues while Redis is away, and a notification's 202
    // must not wait for it. A lost publish only leaves the call running to its end, as before.
    for (const id of messages.flatMap(cancelledRequestId)) {
      deps.cancellations.publish(auth.tokenId, id).catch((err: unknown) => log.warn({ err }, 'MCP cancellation not published (Redis did not answer)'));
    }
    const caller = invokeToolCaller(deps.invoke, { auth, requestId, log, clientAddress: req.ip ?? req.socket.remoteAddress ?? 'unknown' });
    const server = buildServer({ caller, naming: 'hosted', onUnexpected: (err) => log.error({ err }, 'MCP tool failed unexpectedly') });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const unregister = messages.flatMap(toolCallId).map((id) =>
      deps.cancellations.register(auth.tokenId, id, () => {
        // The stdio path: the server hears the client's notification, aborts the call's signal
        // (following stops, the run goes on) and sends no answer for it, as MCP asks...
        transport.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'cancelled by the client' } });
        // ...so nothing else would end this POST's stream: end it here.
        transport.closeSSEStream(id);
      }),
    );
    // The client gone (or the answer sent): closing the server aborts its tool calls' signals, so a
    // followed run is let go of (the run goes on).
    res.on('close', () => {
      for (const release of unregister) release();
      void server.close().catch(() => undefined);
    });
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

/** The id a `notifications/cancelled` message names, if the message is one. */
function cancelledRequestId(message: unknown): McpRequestId[] {
  const { method, params } = (message ?? {}) as { method?: unknown; params?: { requestId?: unknown } };
  return method === 'notifications/cancelled' && isRequestId(params?.requestId) ? [params.requestId] : [];
}

/** The id of a `tools/call` request, if the message is one (only tool calls run long enough to cancel). */
function toolCallId(message: unknown): McpRequestId[] {
  const { method, id } = (message ?? {}) as { method?: unknown; id?: unknown };
  return method === 'tools/call' && isRequestId(id) ? [id] : [];
}
