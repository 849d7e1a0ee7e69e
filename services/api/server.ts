import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { loadSettings, type HttpServerSettings } from '../platform/config';

export interface RunningServer {
  server: http.Server;
  /** The URL the server answers on (the bound port, useful when configured with port 0). */
  url: string;
  close(graceMs: number): Promise<void>;
}

const defaults = loadSettings(['httpHeadersTimeoutMs', 'httpRequestTimeoutMs', 'httpKeepAliveTimeoutMs', 'httpMaxHeaderBytes'], {});

/** The configuration's defaults of the `HTTP_*` settings. */
export const DEFAULT_HTTP_SETTINGS: HttpServerSettings = {
  headersTimeoutMs: defaults.httpHeadersTimeoutMs,
  requestTimeoutMs: defaults.httpRequestTimeoutMs,
  keepAliveTimeoutMs: defaults.httpKeepAliveTimeoutMs,
  maxHeaderBytes: defaults.httpMaxHeaderBytes,
};

/**
 * Listens with limits that protect against slow clients: a request's headers must arrive within
 * `headersTimeoutMs` of its first byte and the whole request, body included, within
 * `requestTimeoutMs` (else 408 and the connection is closed); headers larger than
 * `maxHeaderBytes` are 431; an idle keep-alive connection closes after `keepAliveTimeoutMs`.
 * These bound receiving a request only: a response (a long event stream, `runs.node` waiting for
 * its run) is not limited by them.
 */
export async function listen(app: Express, host: string, port: number, settings: HttpServerSettings = DEFAULT_HTTP_SETTINGS): Promise<RunningServer> {
  let closing = false;
  // One 'finish' listener for every response (a closure per request would be held as long as an
  // open stream): a kept-alive connection would otherwise carry new requests to a stopping
  // process until the grace period cuts it, so once the server is closing, a connection ends
  // with its response.
  function endIfClosing(this: http.ServerResponse): void {
    if (closing) this.req.socket.end();
  }
  const server = http.createServer({
    headersTimeout: settings.headersTimeoutMs,
    requestTimeout: settings.requestTimeoutMs,
    maxHeaderSize: settings.maxHeaderBytes,
    // Node checks the two timeouts on this interval (30 s by default, which would let a slow
    // client hold a connection well past them).
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(settings.headersTimeoutMs / 4))),
  }, (req, res) => {
    if (closing) return refuseWhileStopping(res);
    res.on('finish', endIfClosing);
    app(req, res);
  });
  server.keepAliveTimeout = settings.keepAliveTimeoutMs;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${shownHost}:${address.port}`,
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        // Stop accepting (connections, and requests on kept-alive ones), let in-flight requests
        // finish, then cut whatever is left (open streams: their clients resume with
        // Last-Event-ID on another replica).
        closing = true;
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        timer.unref();
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

/**
 * A request that reached a stopping process on a connection it had kept alive: nothing of it is
 * done; `503 unavailable` with `Retry-After` and the connection closed, so the client retries on
 * another replica (a new connection, which the stopping process no longer accepts).
 */
function refuseWhileStopping(res: http.ServerResponse): void {
  const body = JSON.stringify({ error: 'this server is stopping; retry the request', code: 'unavailable', retryAfterSeconds: 1 });
  res.shouldKeepAlive = false;
  res.writeHead(503, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Retry-After': '1', Connection: 'close' });
  res.end(body);
}
