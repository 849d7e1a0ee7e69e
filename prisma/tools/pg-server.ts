/**
 * Which Postgres server a dev tool talks to, from flags or the environment. The tools create and
 * drop scratch databases there, so they want a server, not just one database's URL.
 *
 *   --url postgresql://user:pass@host:port/db   (or DATABASE_URL)
 *   --host H --port P --user U [--password W]   (or PGHOST, PGPORT, PGUSER, PGPASSWORD)
 *
 * Flags win over the environment. There is deliberately no fallback to a default server.
 */

/** A Postgres server and the database to open on it. */
export interface PgServer {
  host: string;
  port: number;
  user: string;
  password?: string;
  database: string;
}

/** Parses `--name value` and `--name=value` flags; bare words are returned as positional arguments. */
export function parseArgs(argv: readonly string[]): { flags: Map<string, string>; positional: string[] } {
  const flags = new Map<string, string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    if (eq > 0) flags.set(arg.slice(2, eq), arg.slice(eq + 1));
    else if (i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) flags.set(arg.slice(2), argv[++i]!);
    else flags.set(arg.slice(2), 'true');
  }
  return { flags, positional };
}

function fromUrl(raw: string): PgServer {
  const url = new URL(raw);
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') throw new Error(`not a Postgres URL: ${raw}`);
  const server: PgServer = {
    host: decodeURIComponent(url.hostname) || '127.0.0.1',
    port: url.port ? Number(url.port) : 5432,
    user: decodeURIComponent(url.username) || 'postgres',
    database: decodeURIComponent(url.pathname.replace(/^\//, '')) || 'postgres',
  };
  if (url.password) server.password = decodeURIComponent(url.password);
  return server;
}

/** Resolves the server from flags, then the environment; throws with a usage hint when neither names one. */
export function resolvePgServer(flags: Map<string, string>, env: NodeJS.ProcessEnv = process.env): PgServer {
  const url = flags.get('url') ?? (flags.has('host') ? undefined : env.DATABASE_URL);
  if (url) return fromUrl(url);
  const host = flags.get('host') ?? env.PGHOST;
  const port = flags.get('port') ?? env.PGPORT;
  if (!host || !port) {
    throw new Error('name the Postgres server: --url postgresql://user@host:port/db (or DATABASE_URL), or --host H --port P [--user U] [--password W] (or PGHOST/PGPORT/PGUSER/PGPASSWORD)');
  }
  const server: PgServer = { host, port: Number(port), user: flags.get('user') ?? env.PGUSER ?? 'postgres', database: flags.get('database') ?? env.PGDATABASE ?? 'postgres' };
  const password = flags.get('password') ?? env.PGPASSWORD;
  if (password) server.password = password;
  return server;
}

/** A `postgresql://` URL for one database of the server. */
export function databaseUrl(server: PgServer, database: string = server.database): string {
  const auth = encodeURIComponent(server.user) + (server.password ? `:${encodeURIComponent(server.password)}` : '');
  return `postgresql://${auth}@${server.host}:${server.port}/${encodeURIComponent(database)}`;
}
