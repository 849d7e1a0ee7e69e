import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A loopback HTTP server that records every request it receives (a canary, or a stand-in for an outside server). */
export interface RecordingServer {
  port: number;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  requests: { method: string; url: string; host: string | undefined }[];
  close(): Promise<void>;
}

/**
 * Starts a recording server on `host` (default 127.0.0.1; `::` listens on every local address of
 * both families, so that no loopback or own address of the machine escapes the record).
 */
export async function recordingServer(
  handle: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_req, res) => res.end('canary'),
  host = '127.0.0.1',
): Promise<RecordingServer> {
  const requests: RecordingServer['requests'] = [];
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', host: req.headers.host });
    handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: 0, host, ipv6Only: false }, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** A request a {@link webhookReceiver} took: its headers and its body as text. */
export interface ReceivedRequest {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A loopback webhook receiver answering 200 to everything, keeping each request's headers and body (`received`). */
export async function webhookReceiver(): Promise<RecordingServer & { received: ReceivedRequest[] }> {
  const received: ReceivedRequest[] = [];
  const server = await recordingServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.end('ok');
    });
  });
  return Object.assign(server, { received });
}
