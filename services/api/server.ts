import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

export interface RunningServer {
  server: http.Server;
  /** The URL the server answers on (the bound port, useful when configured with port 0). */
  url: string;
  close(graceMs: number): Promise<void>;
}

/**
 * Listens with timeouts that protect against slow clients: headers must arrive within 20 s and
 * a whole request body within 60 s. Responses (long event streams) are not limited.
 */
export async function listen(app: Express, host: string, port: number): Promise<RunningServer> {
  const server = http.createServer(app);
  server.headersTimeout = 20_000;
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 65_000;
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
        // Stop accepting, let in-flight requests finish, then cut whatever is left (open streams:
        // their clients resume with Last-Event-ID on another replica).
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
