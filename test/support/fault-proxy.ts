import net from 'node:net';

/** What the proxy does with new connections. */
export type ProxyMode = 'pass' | 'refuse' | 'blackhole';

/**
 * A TCP proxy in front of a server (HTTP, Redis, Postgres: it reads no protocol), for breaking
 * the path to it on purpose: it passes bytes both ways, optionally late (`latencyMs`), and can
 * cut every open connection when the server's bytes match (`cutWhen`), reset every open one
 * (`resetAll`), refuse new connections (closed as soon as accepted), blackhole them (accepted,
 * nothing forwarded), or make the open ones go silent without closing (half-open peers). Counts
 * connections so a test can see reconnections happen.
 */
export interface FaultProxy {
  url: string;
  /** The port clients connect to (the URL's). */
  port: number;
  mode: ProxyMode;
  /** Delay of every chunk, each way (order kept); 0: none. */
  latencyMs: number;
  /** The first bytes each connection sent (its first request's head), in order. */
  readonly heads: string[];
  /** Connections accepted so far. */
  readonly connections: number;
  /** Connections open now. */
  readonly open: number;
  /** New connections whose first request's head matches are reset (e.g. only a run's events route); null: none. */
  refuseRequests: ((head: string) => boolean) | null;
  /** Open connections stop carrying the server's bytes, without closing: a peer gone silent (half-open). */
  freezeOpen(): void;
  /** Open connections stop carrying bytes either way, without closing: a network partition. */
  blackholeOpen(): void;
  /** Resets (RST) every open connection, both sides. */
  resetAll(): void;
  /** Cuts a connection (both sides, RST) once `test` is true of the server bytes it has carried; once. */
  cutWhen(test: (downstream: string) => boolean): void;
  close(): Promise<void>;
}

/** Writes `chunk` to `to` after `delay()` ms; equal delays keep their order (timers of one duration fire in turn). */
function relay(to: net.Socket, chunk: Buffer, delay: number): void {
  if (delay <= 0) to.write(chunk);
  else setTimeout(() => to.destroyed || to.write(chunk), delay);
}

export async function startFaultProxy(target: string, listenPort = 0): Promise<FaultProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  let cut: ((downstream: string) => boolean) | undefined;
  let connections = 0;
  const frozen = new WeakSet<net.Socket>();
  const silenced = new WeakSet<net.Socket>();
  const open = new Set<net.Socket>();
  const proxy: FaultProxy = {
    url: '',
    port: 0,
    mode: 'pass',
    latencyMs: 0,
    refuseRequests: null,
    heads: [],
    get connections() {
      return connections;
    },
    get open() {
      return open.size;
    },
    freezeOpen() {
      for (const client of open) frozen.add(client);
    },
    blackholeOpen() {
      for (const client of open) {
        frozen.add(client);
        silenced.add(client);
      }
    },
    resetAll() {
      for (const socket of sockets) socket.resetAndDestroy();
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
    client.on('data', (chunk: Buffer) => silenced.has(client) || relay(upstream, chunk, proxy.latencyMs));
    // A client's half-close reaches the server after the bytes before it.
    client.on('end', () => (proxy.latencyMs > 0 ? setTimeout(() => upstream.end(), proxy.latencyMs) : upstream.end()));
    client.resume();
    let carried = '';
    upstream.on('data', (chunk: Buffer) => {
      if (frozen.has(client)) return;
      relay(client, chunk, proxy.latencyMs);
      if (!cut) return;
      carried += chunk.toString('latin1');
      if (cut(carried)) {
        cut = undefined;
        client.resetAndDestroy();
        upstream.destroy();
      }
    });
  }
  await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  proxy.port = address.port;
  proxy.url = `http://127.0.0.1:${address.port}`;
  return proxy;
}
