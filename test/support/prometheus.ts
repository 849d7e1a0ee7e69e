import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { eventually } from './eventually';

/**
 * Prometheus' own programs in tests: `promtool` (rule checks and rule unit tests) and a real
 * Prometheus server on loopback that scrapes the processes a test starts. Both come from the
 * Debian package `prometheus`, which `make test` installs (deploy/local/install-deps.sh).
 */

/** Throws, saying how to install it, when the Prometheus program `name` is not on PATH. */
export function requirePrometheusTool(name: 'promtool' | 'prometheus'): void {
  const probe = spawnSync(name, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      `${name} is not installed (${probe.error?.message ?? `exit ${probe.status}`}): install the Debian package with ` +
        '`sudo bash deploy/local/install-deps.sh prometheus` (or `apt-get install prometheus`); make test does this by itself',
    );
  }
}

/** Runs promtool with `args` in `cwd`; its exit status and its output, stdout and stderr together. */
export function promtool(args: string[], cwd: string): { status: number | null; output: string } {
  requirePrometheusTool('promtool');
  const result = spawnSync('promtool', args, { cwd, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/**
 * `promtool check metrics` on a scrape's text: its exit status and its findings (one a line:
 * names, types, units or help that break Prometheus' conventions). A clean scrape is status 0
 * and no output.
 */
export function checkMetrics(text: string): { status: number | null; output: string } {
  requirePrometheusTool('promtool');
  const result = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

export interface ScrapeTarget {
  job: string;
  /** host:port */
  target: string;
}

/** One sample of an instant query's vector result. */
export interface PromSample {
  metric: Record<string, string>;
  value: number;
}

export interface PrometheusServer {
  url: string;
  /** An instant query (`/api/v1/query`); throws when Prometheus answers other than success. */
  query(expr: string): Promise<PromSample[]>;
  /** GET of an API path (`/api/v1/rules`), its `data`. */
  api<T>(apiPath: string): Promise<T>;
  /** Stops the server (SIGTERM, then SIGKILL after 10 s) and deletes its directory. */
  close(): Promise<void>;
}

/**
 * A Prometheus server on 127.0.0.1:`port` with its data in a temporary directory, scraping
 * `targets` every second and evaluating `ruleFiles` every second; resolves once it is ready.
 */
export async function startPrometheus(options: { port: number; targets: ScrapeTarget[]; ruleFiles: string[] }): Promise<PrometheusServer> {
  requirePrometheusTool('prometheus');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-prometheus-'));
  const configFile = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(
    configFile,
    stringify({
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: options.ruleFiles.map((f) => path.resolve(f)),
      scrape_configs: options.targets.map((t) => ({ job_name: t.job, metrics_path: '/metrics', static_configs: [{ targets: [t.target] }] })),
    }),
  );
  const logFile = path.join(dir, 'prometheus.log');
  const log = fs.openSync(logFile, 'a');
  const child: ChildProcess = spawn(
    'prometheus',
    [`--config.file=${configFile}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${options.port}`],
    { cwd: dir, stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${options.port}`;
  const readLog = () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '');

  const server: PrometheusServer = {
    url,
    async api<T>(apiPath: string): Promise<T> {
      const res = await fetch(`${url}${apiPath}`);
      const body = (await res.json()) as { status: string; data: T; error?: string };
      if (body.status !== 'success') throw new Error(`Prometheus answered ${res.status} to ${apiPath}: ${body.error ?? JSON.stringify(body)}`);
      return body.data;
    },
    async query(expr: string): Promise<PromSample[]> {
      const data = await server.api<{ resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`);
      if (data.resultType !== 'vector') throw new Error(`${expr} is a ${data.resultType}, not a vector`);
      return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`prometheus exited (${child.exitCode ?? child.signalCode}): ${readLog().slice(-2000)}`);
        return (await fetch(`${url}/-/ready`)).status === 200;
      },
      { timeoutMs: 60_000, intervalMs: 100, what: `Prometheus on ${url} to be ready` },
    );
  } catch (err) {
    await server.close();
    throw err;
  }
  return server;
}
