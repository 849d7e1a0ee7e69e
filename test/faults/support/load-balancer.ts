import net from 'node:net';

/**
 * The load balancer in front of the API processes: TCP, round robin per connection, as a
 * layer-4 balancer (or a Kubernetes Service) is. A backend that refuses the connection (its
 * process is down) is skipped for the next one, so clients see an API process die only as the
 * loss of the connections it held.
 */
export interface LoadBalancer {
  url: string;
  /** Connections accepted per backend port. */
  readonly accepted: Map<number, number>;
  close(): Promise<void>;
}

export async function startLoadBalancer(backendPorts: readonly number[]): Promise<LoadBalancer> {
  const sockets = new Set<net.Socket>();
  const accepted = new Map<number, number>(backendPorts.map((p) => [p, 0]));
  let next = 0;

  function connect(client: net.Socket, tries: number): void {
    const port = backendPorts[next++ % backendPorts.length]!;
    const upstream = net.connect(port, '127.0.0.1');
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      accepted.set(port, (accepted.get(port) ?? 0) + 1);
      sockets.add(upstream);
      client.pipe(upstream);
      upstream.pipe(client);
      client.once('close', () => upstream.destroy());
      client.resume();
    });
    upstream.on('error', () => {
      if (!connected && tries > 1 && !client.destroyed) return connect(client, tries - 1);
      client.destroy();
    });
    upstream.on('close', () => {
      sockets.delete(upstream);
      if (connected) client.destroy();
    });
  }

  const server = net.createServer({ pauseOnConnect: true }, (client) => {
    sockets.add(client);
    client.on('error', () => undefined);
    client.on('close', () => sockets.delete(client));
    connect(client, backendPorts.length * 2);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    accepted,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
