import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { parse, stringify } from 'yaml';
import { createMetrics } from '../../services/platform/metrics';
import { serviceProcess, type ServiceProcess } from '../faults/support/service-process';
import { eventually } from '../support/eventually';
import { freePorts } from '../support/local-servers';
import { checkMetrics, promtool, requirePrometheusTool, startPrometheus, type PrometheusServer } from '../support/prometheus';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { exited, startWorkerProcess } from '../support/worker-process';

/**
 * The alert rules and the Grafana dashboard of deploy/observability are valid
 * PromQL over the metrics docs/operations.md documents, the rules pass their promtool unit tests,
 * and a real Prometheus scrapes a running API process and worker process with the rules loaded.
 */

const ROOT = path.resolve(__dirname, '../..');
const DIR = path.join(ROOT, 'deploy/observability');

interface AlertRules {
  groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
}
const alertRules = (): AlertRules => parse(fs.readFileSync(path.join(DIR, 'alerts.yml'), 'utf8')) as AlertRules;

interface DashboardPanel {
  id: number;
  title: string;
  type: string;
  datasource?: { uid?: string };
  targets?: { refId: string; expr: string }[];
  panels?: DashboardPanel[];
}
interface Dashboard {
  schemaVersion: number;
  templating: { list: { name: string; type: string; query: unknown }[] };
  panels: DashboardPanel[];
}
const dashboard = (): Dashboard => JSON.parse(fs.readFileSync(path.join(DIR, 'grafana-dashboard.json'), 'utf8')) as Dashboard;

/** Every target of the dashboard, rows' panels included, named by panel and refId. */
function dashboardTargets(d: Dashboard): { name: string; title: string; expr: string }[] {
  const panels = d.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  return panels.flatMap((p) => (p.targets ?? []).map((t) => ({ name: `dashboard:panel_${p.id}_${t.refId}`, title: p.title, expr: t.expr })));
}

/** Grafana's variables as a query would be sent: intervals as durations, the templated labels as "any". */
function substituteGrafanaVariables(expr: string): string {
  return expr
    .replace(/\$\{?__rate_interval\}?/g, '5m')
    .replace(/\$\{?__interval\}?/g, '1m')
    .replace(/\$\{?__range\}?/g, '1h')
    .replace(/\$\{?(role|instance)\}?/g, '.*');
}

const PROMQL_KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'atan2', 'inf', 'nan']);

/**
 * The metric names a PromQL expression selects: what is left once strings, label matchers,
 * ranges, grouping clauses and offsets are taken out, less functions (a name before a
 * parenthesis) and keywords.
 */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\boffset\s+-?\w+/g, ' ');
  const names = [...bare.matchAll(/(?<![\w:.])([a-zA-Z_:][\w:]*)(?![\w:]|\s*\()/g)].map((m) => m[1]!);
  return [...new Set(names.filter((n) => !PROMQL_KEYWORDS.has(n.toLowerCase())))];
}

/** docs/operations.md's table (histograms as their _bucket, _sum and _count series), prom-client's defaults and `up`. */
async function knownMetricNames(): Promise<Set<string>> {
  const expand = (name: string, type: string) => (type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : type === 'summary' ? [name, `${name}_sum`, `${name}_count`] : [name]);
  const doc = fs.readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
  const documented = [...doc.matchAll(/^\| `(svc_\w+)` \| (counter|gauge|histogram) \|/gm)].flatMap((m) => expand(m[1]!, m[2]!));
  expect(documented.length).toBeGreaterThan(20);
  // prom-client's defaults as a process serves them (services/platform/metrics.ts leaves some out).
  const served = await createMetrics({ role: 'all' }).registry.getMetricsAsJSON();
  const fromPromClient = served.filter((m) => !m.name.startsWith('svc_')).flatMap((m) => expand(m.name, String(m.type)));
  return new Set([...documented, ...fromPromClient, 'up']);
}

describe('the alert rules (deploy/observability/alerts.yml)', () => {
  it('pass promtool check rules', () => {
    const { status, output } = promtool(['check', 'rules', 'alerts.yml'], DIR);
    expect({ status, output }).toEqual({ status: 0, output: expect.stringContaining('SUCCESS') });
  });

  it('fire, and keep quiet, as their unit tests expect (promtool test rules)', () => {
    const { status, output } = promtool(['test', 'rules', 'alerts.test.yml'], DIR);
    expect({ status, output }).toEqual({ status: 0, output: expect.stringContaining('SUCCESS') });
  });

  it('have a severity, a for duration, a summary and a description pointing at docs/operations.md, and each a test that fires it', () => {
    const tests = fs.readFileSync(path.join(DIR, 'alerts.test.yml'), 'utf8');
    const rules = alertRules().groups.flatMap((g) => g.rules) as { alert: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }[];
    expect(rules.length).toBeGreaterThanOrEqual(9);
    const lacking = rules.filter(
      (r) => !r.alert || !r.for || !['critical', 'warning'].includes(r.labels?.severity ?? '') || !r.annotations?.summary || !/docs\/operations\.md/.test(r.annotations.description ?? '') || !new RegExp(`alertname: ${r.alert}\\n\\s+exp_alerts:\\n\\s+- exp_labels`).test(tests),
    );
    expect(lacking.map((r) => r.alert)).toEqual([]);
  });

  it('select only metrics that docs/operations.md, prom-client or Prometheus define', async () => {
    const known = await knownMetricNames();
    const unknown = alertRules().groups.flatMap((g) => g.rules.flatMap((r) => metricNames(r.expr).filter((n) => !known.has(n)).map((n) => `${r.alert}: ${n}`)));
    expect(unknown).toEqual([]);
  });
});

describe('the Grafana dashboard (deploy/observability/grafana-dashboard.json)', () => {
  it('reads from a templated Prometheus data source and filters by role and instance', () => {
    const d = dashboard();
    expect(d.schemaVersion).toBeGreaterThanOrEqual(39);
    expect(d.templating.list.find((v) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(d.templating.list.map((v) => v.name)).toEqual(expect.arrayContaining(['role', 'instance']));
    const panels = d.panels.filter((p) => p.type !== 'row');
    expect(panels.filter((p) => p.datasource?.uid !== '${datasource}').map((p) => p.title)).toEqual([]);
    expect(panels.filter((p) => !p.targets?.length).map((p) => p.title)).toEqual([]);
  });

  it('has only expressions that Prometheus parses (as recording rules, with Grafana variables substituted)', () => {
    const targets = dashboardTargets(dashboard());
    expect(targets.length).toBeGreaterThanOrEqual(30);
    const rules = targets.map((t) => ({ record: t.name, expr: substituteGrafanaVariables(t.expr) }));
    expect(rules.filter((r) => r.expr.includes('$')).map((r) => `${r.record}: ${r.expr}`)).toEqual([]);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-dashboard-rules-'));
    try {
      fs.writeFileSync(path.join(tmp, 'dashboard-rules.yml'), stringify({ groups: [{ name: 'dashboard', rules }] }));
      const { status, output } = promtool(['check', 'rules', 'dashboard-rules.yml'], tmp);
      // A failure names the rule: dashboard:panel_<panel id>_<refId>.
      expect({ status, output }).toEqual({ status: 0, output: expect.stringContaining(`SUCCESS: ${rules.length} rules found`) });
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('selects only metrics that docs/operations.md, prom-client or Prometheus define', async () => {
    const known = await knownMetricNames();
    const unknown = dashboardTargets(dashboard()).flatMap((t) => metricNames(t.expr).filter((n) => !known.has(n)).map((n) => `${t.title}: ${n}`));
    expect(unknown).toEqual([]);
  });

  it('(the name check itself) finds the metrics of an expression and flags one that does not exist', async () => {
    const known = await knownMetricNames();
    const expr = 'histogram_quantile(0.99, sum by (le, node) (rate(svc_step_duration_seconds_bucket{node=~"a|b", role=~"$role"}[$__rate_interval]))) / ignoring (node) group_left sum(svc_made_up_total offset 5m) and on() up == bool 1';
    expect(metricNames(expr).sort()).toEqual(['svc_made_up_total', 'svc_step_duration_seconds_bucket', 'up']);
    expect(metricNames(expr).filter((n) => !known.has(n))).toEqual(['svc_made_up_total']);
  });
});

describe('a real Prometheus scraping an API process and a worker process', () => {
  let service: TestService;
  let api: ServiceProcess | undefined;
  let worker: ChildProcess | undefined;
  let prometheus: PrometheusServer | undefined;
  let logDir: string;
  let metricsPort: number;

  beforeAll(async () => {
    requirePrometheusTool('prometheus');
    logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-observability-'));
    // Its database, Redis prefix and account; its own runtime (ROLE=api) takes no step.
    service = await startTestService({ env: { ROLE: 'api' } });
    const ports = (await freePorts(3)) as [number, number, number];
    const [apiPort, , prometheusPort] = ports;
    metricsPort = ports[1];
    // The API as production runs it (workers/serve.ts, ROLE=api), so its series carry role="api".
    api = serviceProcess({ name: 'api', role: 'api', port: apiPort, env: { ...process.env, ...service.env, LOG_LEVEL: 'info', PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}` } as Record<string, string>, logDir });
    worker = startWorkerProcess(service, { METRICS_PORT: String(metricsPort) });
    await api.start();
    await eventually(async () => (await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status === 200, { timeoutMs: 60_000, intervalMs: 100, what: "the worker's /readyz to answer 200" });
    prometheus = await startPrometheus({
      port: prometheusPort,
      targets: [
        { job: 'svc-api', target: `127.0.0.1:${apiPort}` },
        { job: 'svc-worker', target: `127.0.0.1:${metricsPort}` },
      ],
      ruleFiles: [path.join(DIR, 'alerts.yml')],
    });

    const workflow = { version: 2, nodes: [{ id: 'sum', uses: 'math-add', inputs: { a: 1, b: 2 } }, { id: 'out', uses: 'output', inputs: { value: '${sum.result}' } }] };
    const res = await fetch(`${api.url}/v1/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow }) });
    expect(res.status).toBe(200);
    const messages = await readSse(res);
    expect(messages.at(-2)?.data).toContain('run.completed');
  }, 180_000);

  afterAll(async () => {
    await prometheus?.close();
    if (worker) {
      worker.kill('SIGKILL');
      await exited(worker);
    }
    await api?.kill();
    await service?.close();
    if (logDir) fs.rmSync(logDir, { recursive: true, force: true });
  }, 60_000);

  /** Waits until `expr` returns samples that satisfy `ok`, then returns them. */
  const until = (expr: string, ok: (samples: { metric: Record<string, string>; value: number }[]) => boolean) =>
    eventually(
      async () => {
        const samples = await prometheus!.query(expr);
        return ok(samples) ? samples : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, what: `Prometheus to answer ${expr} as expected` },
    );

  it("serves, from each process, a /metrics that Prometheus' own lint passes with nothing to report (promtool check metrics)", async () => {
    for (const url of [api!.url, `http://127.0.0.1:${metricsPort}`]) {
      const res = await fetch(`${url}/metrics`);
      expect(res.status).toBe(200);
      expect({ url, ...checkMetrics(await res.text()) }).toEqual({ url, status: 0, output: '' });
    }
  });

  it('scrapes both targets, with up = 1', async () => {
    for (const job of ['svc-api', 'svc-worker']) {
      const [sample] = await until(`up{job="${job}"}`, (s) => s.length === 1 && s[0]!.value === 1);
      expect(sample!.value).toBe(1);
    }
  });

  it("stores the API's run counter with role=\"api\" and the worker's concurrency with role=\"worker\"", async () => {
    const started = await until('svc_runs_started_total{job="svc-api"}', (s) => s.some((x) => x.value >= 1));
    expect(started.map((s) => s.metric.role)).toEqual(['api']);
    const concurrency = await until('svc_worker_concurrency{job="svc-worker"}', (s) => s.length > 0);
    expect(concurrency.map((s) => [s.metric.role, s.value])).toEqual([['worker', service.config.workerConcurrency]]);
  });

  it('stores the queue gauge from both processes and the step attempts by node from the worker', async () => {
    const waiting = await until('svc_step_jobs{state="waiting"}', (s) => s.length === 2);
    expect(waiting.map((s) => s.metric.job).sort()).toEqual(['svc-api', 'svc-worker']);
    const steps = await until('svc_step_duration_seconds_count{node="math-add", outcome="completed"}', (s) => s.some((x) => x.value >= 1));
    expect(steps.map((s) => [s.metric.job, s.metric.role])).toEqual([['svc-worker', 'worker']]);
  });

  it('loads every alert group of alerts.yml and evaluates each rule without error', async () => {
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    const expected = alertRules().groups.map((g) => ({ name: g.name, rules: g.rules.map((r) => ({ name: r.alert, health: 'ok' })) })).sort(byName);
    type Rules = { groups: { name: string; rules: { name: string; health: string; lastError?: string }[] }[] };
    const loaded = await eventually(
      async () => {
        const data = await prometheus!.api<Rules>('/api/v1/rules?type=alert');
        return data.groups.every((g) => g.rules.every((r) => r.health !== 'unknown')) && data.groups.length > 0 ? data : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, what: 'every alert rule to have been evaluated once' },
    );
    // Prometheus lists the groups by name; a rule that failed to evaluate shows its lastError here.
    const got = loaded.groups.map((g) => ({ name: g.name, rules: g.rules.map((r) => ({ name: r.name, health: r.health, ...(r.lastError ? { lastError: r.lastError } : {}) })) }));
    expect(got.sort(byName)).toEqual(expected);
  });
});
