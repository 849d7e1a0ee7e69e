import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually } from '../../support/eventually';
import { freePorts } from '../../support/local-servers';

/** Debian's nginx (`deploy/local/install-deps.sh nginx`). */
export const NGINX_BIN = '/usr/sbin/nginx';

/** An nginx of one test file's own, in front of one upstream. */
export interface Nginx {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** What nginx wrote to its error log so far (for failure messages). */
  errors(): string;
  close(): Promise<void>;
}

/**
 * Starts nginx as a child process (not a daemon) with its own prefix, configuration, pid file,
 * logs and temporary paths in a temp directory, listening on a free loopback port, proxying
 * everything to `upstream` with nginx's DEFAULT proxy settings: a plain
 * `location / { proxy_pass ...; }` (buffering on, HTTP/1.0 to the upstream, 60 s read timeout),
 * as an operator who puts the service behind nginx without tuning it would.
 */
export async function startNginx(upstream: string): Promise<Nginx> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-nginx-'));
  const [port] = (await freePorts(1)) as [number];
  const errorLog = path.join(dir, 'error.log');
  const conf = `
daemon off;
pid ${dir}/nginx.pid;
error_log ${errorLog} info;
events { worker_connections 1024; }
http {
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    location / { proxy_pass ${upstream.replace(/\/+$/, '')}; }
  }
}
`;
  fs.writeFileSync(path.join(dir, 'nginx.conf'), conf);
  const child: ChildProcess = spawn(NGINX_BIN, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', errorLog], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let exited = false;
  child.once('exit', () => (exited = true));
  const url = `http://127.0.0.1:${port}`;
  const errors = (): string => `${stderr}${fs.existsSync(errorLog) ? fs.readFileSync(errorLog, 'utf8') : ''}`;
  await eventually(
    async () => {
      if (exited) throw new Error(`nginx exited at start: ${errors()}`);
      return fetch(`${url}/healthz`).then((res) => res.status === 200, () => false);
    },
    { timeoutMs: 15_000, intervalMs: 100, what: `nginx on port ${port} to proxy /healthz` },
  );
  return {
    url,
    errors,
    async close() {
      if (!exited) {
        const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGQUIT');
        await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 5000))]);
        if (!exited) child.kill('SIGKILL');
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
