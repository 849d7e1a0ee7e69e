import net from 'node:net';

/** What the proxy does with new connections. */
export type ProxyMode = 'pass' | 'refuse' | 'blackhole';

/**
 * A TCP proxy in front of a server, for cutting clients off on purpose: it passes bytes both
 * ways, and can cut every open connection when the server's bytes match (`cutWhen`), refuse new
 * connections (closed as soon as accepted), or blackhole them (accepted, nothing forwarded: a
 * half-open peer). Counts connections so a test can see reconnections happen.
 */
export interface FaultProxy {
  url: string;
  mode: ProxyMode;
  /** The first bytes each connection sent (its first request's head), in order. */
  readonly heads: string[];
  /** Connections accepted so far. */
  readonly connections: number;
  /** New connections whose first request's head matches are reset (e.g. only a run's events route); null: none. */
  refuseRequests: ((head: string) => boolean) | null;
  /** Open connections stop carrying the server's bytes, without closing: a peer gone silent (half-open). */
  freezeOpen(): void;
  /** Cuts a connection (both sides, RST) once `test` is true of the server bytes it has carried; once. */
  cutWhen(test: (downstream: string) => boolean): void;
  close(): Promise<void>;
}

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  let cut: ((downstream: string) => boolean) | undefined;
  let connections = 0;
  const frozen = new WeakSet<net.Socket>();
  const open = new Set<net.Socket>();
  const proxy: FaultProxy = {
    url: '',
    mode: 'pass',
    refuseRequests: null,
    heads: [],
    get connections() {
      return connections;
    },
    freezeOpen() {
      for (const client of open) frozen.add(client);
    },
    cutWhen(test) {
      cut = test;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = net.createServer((client) => {
    connections += 1;
    sockets.add(client);
    open.add(client);
    client.on('close', () => {
      sockets.delete(client);
      open.delete(client);
    });
    client.on('error', () => undefined);
    client.once('data', (first: Buffer) => proxy.heads.push(first.toString('latin1')));
    if (proxy.mode === 'refuse') {
      client.resetAndDestroy();
      return;
    }
    if (proxy.mode === 'blackhole') return;
    if (proxy.refuseRequests) {
      const refuse = proxy.refuseRequests;
      client.once('data', (first: Buffer) => {
        if (refuse(first.toString('latin1'))) {
          client.resetAndDestroy();
          return;
        }
        client.pause();
        forward(client, first);
      });
      return;
    }
    forward(client);
  });

  function forward(client: net.Socket, first?: Buffer): void {
    const upstream = net.connect(Number(port), hostname);
    if (first) upstream.write(first);
    sockets.add(upstream);
    upstream.on('close', () => {
      sockets.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream);
    let carried = '';
    upstream.on('data', (chunk: Buffer) => {
      if (frozen.has(client)) return;
      client.write(chunk);
      if (!cut) return;
      carried += chunk.toString('latin1');
      if (cut(carried)) {
        cut = undefined;
        client.resetAndDestroy();
        upstream.destroy();
      }
    });
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  proxy.url = `http://127.0.0.1:${address.port}`;
  return proxy;
}
