/**
 * The deployment artifacts, checked offline: the kustomize base and overlays rendered here (the
 * few kustomize rules they use, below) and every object validated against Kubernetes' schemas
 * (kubernetes-models) and KEDA's ScaledObject schema (@kubernetes-models/keda); then the facts that
 * tie them to the service: settings that exist in services/platform/config.ts and pass its checks,
 * probes on the right paths and ports, grace periods longer than the service's stop, non-root
 * pods, one image. The Dockerfile is parsed (dockerfile-ast) and linted (dockerfile-utils); the
 * compose file is parsed and checked the same way.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { DockerfileParser } from 'dockerfile-ast';
import { validate as lintDockerfile } from 'dockerfile-utils';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfig, loadSettings, SETTINGS } from '../../services/platform/config';
import { createMetrics } from '../../services/platform/metrics';

const ROOT = path.join(__dirname, '../..');
const KUBE = path.join(ROOT, 'deploy/kubernetes');
const SETTING_NAMES = new Set<string>(Object.values(SETTINGS).map((s) => s.env));
const DEFAULT_METRICS_PORT = Number(SETTINGS.metricsPort.default);

type Json = Record<string, unknown>;
interface KubeObject extends Json {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}
interface Container extends Json {
  name: string;
  image: string;
  command?: string[];
  env?: { name: string; value?: string }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: { httpGet?: { path: string; port: number | string } };
  readinessProbe?: { httpGet?: { path: string; port: number | string } };
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; allowPrivilegeEscalation?: boolean };
}
interface PodSpec {
  terminationGracePeriodSeconds?: number;
  restartPolicy?: string;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  containers: Container[];
}

// ---- kustomize, the subset the overlays use -------------------------------------------------

const KUSTOMIZATION_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'patches', 'images', 'namespace']);
/** Lists that a strategic merge patch merges by `name` (the overlays patch containers only). */
const MERGED_BY_NAME = new Set(['containers', 'initContainers', 'env', 'volumes']);

function readYamlDocuments(file: string): KubeObject[] {
  return parseAllDocuments(fs.readFileSync(file, 'utf8')).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message}`);
    const value = doc.toJS() as KubeObject | null;
    return value === null ? [] : [value];
  });
}

function strategicMerge(base: unknown, patch: unknown, field = ''): unknown {
  if (patch === null) return undefined;
  const isMap = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isMap(base) && isMap(patch)) {
    const out: Json = { ...base };
    for (const [key, value] of Object.entries(patch)) {
      if (key.startsWith('$')) throw new Error(`patch directive ${key} is not supported by this renderer`);
      const merged = strategicMerge(base[key], value, key);
      if (merged === undefined) delete out[key];
      else out[key] = merged;
    }
    return out;
  }
  if (Array.isArray(base) && Array.isArray(patch)) {
    if (!MERGED_BY_NAME.has(field)) throw new Error(`a patch of the list "${field}" is not supported by this renderer (lists merged by name: ${[...MERGED_BY_NAME].join(', ')})`);
    const out = [...(base as Json[])];
    for (const item of patch as Json[]) {
      const at = out.findIndex((b) => b.name === item.name);
      if (at < 0) out.push(item);
      else out[at] = strategicMerge(out[at], item) as Json;
    }
    return out;
  }
  return structuredClone(patch);
}

function podSpecOf(object: KubeObject): PodSpec | undefined {
  return (object.spec as { template?: { spec?: PodSpec } } | undefined)?.template?.spec;
}

/** `kubectl kustomize DIR` for kustomizations made of resources, strategic merge patch files, images and a namespace. */
function renderKustomization(dir: string): KubeObject[] {
  const kustomization = parse(fs.readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8')) as Json;
  const unknown = Object.keys(kustomization).filter((key) => !KUSTOMIZATION_FIELDS.has(key));
  if (unknown.length > 0) throw new Error(`${dir}: kustomization fields ${unknown.join(', ')} are not supported by this renderer`);
  let objects = ((kustomization.resources ?? []) as string[]).flatMap((entry) => {
    const target = path.resolve(dir, entry);
    return fs.statSync(target).isDirectory() ? renderKustomization(target) : readYamlDocuments(target);
  });
  for (const patch of (kustomization.patches ?? []) as { path?: string }[]) {
    if (Object.keys(patch).join() !== 'path' || patch.path === undefined) throw new Error(`${dir}: only patches given by path are supported`);
    for (const doc of readYamlDocuments(path.resolve(dir, patch.path))) {
      const matches = objects.filter((o) => o.apiVersion === doc.apiVersion && o.kind === doc.kind && o.metadata.name === doc.metadata.name);
      if (matches.length !== 1) throw new Error(`${dir}/${patch.path}: ${doc.kind} ${doc.metadata.name} matches ${matches.length} objects`);
      objects = objects.map((o) => (o === matches[0] ? (strategicMerge(o, doc) as KubeObject) : o));
    }
  }
  for (const image of (kustomization.images ?? []) as { name: string; newName?: string; newTag?: string }[]) {
    for (const container of objects.flatMap((o) => podSpecOf(o)?.containers ?? [])) {
      const [name, tag] = container.image.split(':');
      if (name === image.name) container.image = `${image.newName ?? name}:${image.newTag ?? tag ?? 'latest'}`;
    }
  }
  if (typeof kustomization.namespace === 'string') for (const o of objects) o.metadata.namespace = kustomization.namespace;
  return objects;
}

// ---- schemas -------------------------------------------------------------------------------

type Validator = (object: KubeObject) => void;
const SCHEMAS: Record<string, Validator> = {
  'v1/ConfigMap': (o) => new ConfigMap(o as never).validate(),
  'v1/Secret': (o) => new Secret(o as never).validate(),
  'v1/Service': (o) => new Service(o as never).validate(),
  'apps/v1/Deployment': (o) => new Deployment(o as never).validate(),
  'batch/v1/Job': (o) => new Job(o as never).validate(),
  'policy/v1/PodDisruptionBudget': (o) => new PodDisruptionBudget(o as never).validate(),
  'autoscaling/v2/HorizontalPodAutoscaler': (o) => new HorizontalPodAutoscaler(o as never).validate(),
  'keda.sh/v1alpha1/ScaledObject': (o) => new ScaledObject(o as never).validate(),
};

function schemaErrors(object: KubeObject): string | undefined {
  const check = SCHEMAS[`${object.apiVersion}/${object.kind}`];
  if (!check) return `${object.apiVersion} ${object.kind} has no schema in this test`;
  try {
    check(object);
    return undefined;
  } catch (err) {
    return `${object.kind} ${object.metadata.name}: ${(err as Error).message}`;
  }
}

// ---- what the rendered objects say about the service ----------------------------------------

function find(objects: KubeObject[], kind: string, name: string): KubeObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the rendered objects`);
  return found;
}

function onlyContainer(object: KubeObject): Container {
  const containers = podSpecOf(object)?.containers ?? [];
  expect(containers).toHaveLength(1);
  return containers[0] as Container;
}

/** The environment a container gets: its ConfigMaps and Secrets (which must exist), then its own env. */
function environmentOf(objects: KubeObject[], container: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) Object.assign(env, find(objects, 'ConfigMap', source.configMapRef.name).data);
    if (source.secretRef) {
      const secret = find(objects, 'Secret', source.secretRef.name) as KubeObject & { data?: Record<string, string>; stringData?: Record<string, string> };
      for (const [k, v] of Object.entries(secret.data ?? {})) env[k] = Buffer.from(v, 'base64').toString('utf8');
      Object.assign(env, secret.stringData);
    }
  }
  for (const item of container.env ?? []) env[item.name] = item.value ?? '';
  return env;
}

function portNumber(container: Container, port: number | string | undefined): number | undefined {
  if (typeof port === 'number') return port;
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

function selects(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  return selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

const podLabels = (o: KubeObject) => (o.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;

const OVERLAYS = ['base', 'overlays/dev', 'overlays/production'];

describe.each(OVERLAYS)('deploy/kubernetes/%s', (overlay) => {
  const objects = renderKustomization(path.join(KUBE, overlay));
  const api = find(objects, 'Deployment', 'svc-api');
  const worker = find(objects, 'Deployment', 'svc-worker');
  const migrate = find(objects, 'Job', 'svc-migrate');

  it('renders objects that are valid against the Kubernetes and KEDA schemas', () => {
    expect(objects.length).toBeGreaterThanOrEqual(11);
    expect(objects.map(schemaErrors).filter((e) => e !== undefined)).toEqual([]);
  });

  it('names only environment variables that services/platform/config.ts reads', () => {
    const names = objects.flatMap((o) => [
      ...Object.keys((o.data as Json | undefined) ?? {}),
      ...Object.keys((o.stringData as Json | undefined) ?? {}),
      ...(podSpecOf(o)?.containers ?? []).flatMap((c) => (c.env ?? []).map((e) => e.name)),
    ]);
    expect(names.length).toBeGreaterThan(10);
    expect(names.filter((n) => !SETTING_NAMES.has(n))).toEqual([]);
  });

  it('gives the API settings the service accepts, and probes /healthz and /readyz on its PORT', () => {
    const container = onlyContainer(api);
    const config = loadConfig(environmentOf(objects, container));
    expect(config.role).toBe('api');
    expect(config.host).not.toMatch(/^(127\.|localhost$)/);
    expect(container.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(container.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(portNumber(container, container.livenessProbe?.httpGet?.port)).toBe(config.port);
    expect(portNumber(container, container.readinessProbe?.httpGet?.port)).toBe(config.port);
    expect(api.spec).toMatchObject({ template: { metadata: { annotations: { 'prometheus.io/port': String(config.port) } } } });
    const service = find(objects, 'Service', 'svc-api').spec as { selector: Record<string, string>; ports: { targetPort: number | string }[] };
    expect(selects(service.selector, podLabels(api))).toBe(true);
    expect(service.ports.map((p) => portNumber(container, p.targetPort))).toEqual([config.port]);
  });

  it('gives the worker its metrics port (the METRICS_PORT default) with /healthz and /readyz on it', () => {
    const container = onlyContainer(worker);
    const config = loadConfig(environmentOf(objects, container));
    expect(config.role).toBe('worker');
    expect(config.host).not.toMatch(/^(127\.|localhost$)/);
    expect(config.metricsPort).toBe(DEFAULT_METRICS_PORT);
    expect(container.ports).toEqual([expect.objectContaining({ name: 'metrics', containerPort: DEFAULT_METRICS_PORT })]);
    expect(container.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(container.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(portNumber(container, container.livenessProbe?.httpGet?.port)).toBe(config.metricsPort);
    expect(portNumber(container, container.readinessProbe?.httpGet?.port)).toBe(config.metricsPort);
    expect(worker.spec).toMatchObject({ template: { metadata: { annotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(config.metricsPort) } } } });
    const metrics = find(objects, 'Service', 'svc-worker-metrics').spec as { clusterIP: string; selector: Record<string, string>; ports: { targetPort: number | string }[] };
    expect(metrics.clusterIP).toBe('None');
    expect(selects(metrics.selector, podLabels(worker))).toBe(true);
    expect(metrics.ports.map((p) => portNumber(container, p.targetPort))).toEqual([config.metricsPort]);
  });

  it('lets each process drain: the grace period exceeds preStop + SHUTDOWN_GRACE_MS + the 5 s hard stop', () => {
    const apiContainer = onlyContainer(api);
    const preStop = apiContainer.lifecycle?.preStop?.exec?.command ?? [];
    expect(preStop[0]).toBe('sleep');
    const sleepSeconds = Number(preStop[1]);
    expect(sleepSeconds).toBeGreaterThan(0);
    const apiGrace = loadConfig(environmentOf(objects, apiContainer)).shutdownGraceMs / 1000;
    expect(podSpecOf(api)?.terminationGracePeriodSeconds).toBeGreaterThan(sleepSeconds + apiGrace + 5);
    const workerGrace = loadConfig(environmentOf(objects, onlyContainer(worker))).shutdownGraceMs / 1000;
    expect(podSpecOf(worker)?.terminationGracePeriodSeconds).toBeGreaterThan(workerGrace + 5);
  });

  it('runs every pod as a non-root user, with requests and limits, all from one image', () => {
    const workloads = objects.filter((o) => podSpecOf(o) !== undefined);
    expect(workloads.map((o) => o.metadata.name).sort()).toEqual(['svc-api', 'svc-migrate', 'svc-worker']);
    for (const workload of workloads) {
      const pod = podSpecOf(workload) as PodSpec;
      for (const container of pod.containers) {
        const where = `${workload.metadata.name}/${container.name}`;
        expect({ where, nonRoot: container.securityContext?.runAsNonRoot ?? pod.securityContext?.runAsNonRoot }).toEqual({ where, nonRoot: true });
        expect({ where, uid: container.securityContext?.runAsUser ?? pod.securityContext?.runAsUser }).toEqual({ where, uid: expect.any(Number) });
        expect(container.securityContext?.runAsUser ?? pod.securityContext?.runAsUser).not.toBe(0);
        expect({ where, escalation: container.securityContext?.allowPrivilegeEscalation }).toEqual({ where, escalation: false });
        for (const kind of ['requests', 'limits'] as const) expect({ where, kind, r: container.resources?.[kind] }).toEqual({ where, kind, r: expect.objectContaining({ cpu: expect.any(String), memory: expect.any(String) }) });
      }
    }
    const images = new Set(workloads.flatMap((o) => (podSpecOf(o) as PodSpec).containers.map((c) => c.image)));
    expect(images.size).toBe(1);
    if (overlay !== 'base') expect([...images][0]).toMatch(/:(?!latest$)[\w.-]+$/);
  });

  it('runs the migration as a Job of workers/migrate.ts that needs only DATABASE_URL', () => {
    const container = onlyContainer(migrate);
    expect(container.command?.join(' ')).toMatch(/workers\/migrate\.ts$/);
    expect(podSpecOf(migrate)?.restartPolicy).toBe('Never');
    expect(() => loadSettings(['databaseUrl'], environmentOf(objects, container))).not.toThrow();
  });

  it('protects both Deployments with a PodDisruptionBudget and scales the API on CPU', () => {
    for (const [name, workload] of [['svc-api', api], ['svc-worker', worker]] as const) {
      const pdb = find(objects, 'PodDisruptionBudget', name).spec as { selector: { matchLabels: Record<string, string> } };
      expect(selects(pdb.selector.matchLabels, podLabels(workload))).toBe(true);
    }
    const hpa = find(objects, 'HorizontalPodAutoscaler', 'svc-api');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.spec).toMatchObject({ scaleTargetRef: { kind: 'Deployment', name: 'svc-api' }, metrics: [{ type: 'Resource', resource: { name: 'cpu' } }] });
    expect(onlyContainer(api).resources?.requests?.cpu).toBeDefined();
  });

  it('scales the workers with KEDA on the waiting step jobs, a metric the service exports', () => {
    const scaled = find(objects, 'ScaledObject', 'svc-worker').spec as {
      scaleTargetRef: { kind?: string; name: string };
      minReplicaCount: number;
      triggers: { type: string; metadata: { query: string; threshold: string } }[];
    };
    expect(scaled.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: worker.metadata.name });
    // Workers run the reaper and the retention sweeper: never none.
    expect(scaled.minReplicaCount).toBeGreaterThanOrEqual(1);
    expect(scaled.triggers).toHaveLength(1);
    const [trigger] = scaled.triggers;
    expect(trigger?.type).toBe('prometheus');
    expect(Number(trigger?.metadata.threshold)).toBeGreaterThan(0);
    const query = trigger?.metadata.query ?? '';
    const registry = createMetrics({ role: 'worker' }).registry;
    const names = [...query.matchAll(/([a-zA-Z_:][\w:]*)\{/g)].map((m) => m[1] as string);
    expect(names).toEqual(['svc_step_jobs']);
    expect(names.filter((n) => registry.getSingleMetric(n) === undefined)).toEqual([]);
    expect(query).toContain('state="waiting"');
    // Every API and worker pod reports the same queue-wide gauge: a sum would count it once per pod.
    expect(query).toMatch(/^max\(/);
  });
});

describe('the kustomize renderer and the schemas of this test', () => {
  it('refuses what it cannot render and what the schemas forbid', () => {
    expect(() => strategicMerge({ ports: [{ port: 1 }] }, { ports: [{ port: 2 }] })).toThrow(/not supported/);
    const deployment = find(renderKustomization(path.join(KUBE, 'base')), 'Deployment', 'svc-api');
    const container = onlyContainer(deployment);
    container.ports = [{ name: 'http', containerPort: 'eighty' as unknown as number }];
    expect(schemaErrors(deployment)).toMatch(/containerPort/);
    const scaled = find(renderKustomization(path.join(KUBE, 'base')), 'ScaledObject', 'svc-worker');
    delete (scaled.spec as Json).scaleTargetRef;
    expect(schemaErrors(scaled)).toMatch(/scaleTargetRef/);
  });
});

// ---- Dockerfile ---------------------------------------------------------------------------

describe('Dockerfile', () => {
  const text = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const dockerfile = DockerfileParser.parse(text);
  const stages = dockerfile.getFROMs();
  const argDefaults = Object.fromEntries(dockerfile.getInitialARGs().flatMap((a) => a.getProperties().map((p) => [p.getName(), p.getValue() ?? ''])));
  const image = (raw: string) => raw.replace(/\$\{(\w+)\}/g, (_, name: string) => argDefaults[name] ?? '');
  const lastStageAt = stages[stages.length - 1]?.getRange().start.line ?? 0;
  const runtime = dockerfile.getInstructions().filter((i) => i.getRange().start.line > lastStageAt);
  const last = (keyword: string) => runtime.filter((i) => i.getKeyword() === keyword).pop();

  it('passes the Dockerfile linter with no finding', () => {
    expect(lintDockerfile(text)).toEqual([]);
  });

  it('builds in one stage and runs from node:20-bookworm-slim in another, copying from the first', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const build = stages[0]?.getBuildStage();
    expect(build).toBeTruthy();
    expect(image(stages[stages.length - 1]?.getArgumentsContent()?.split(/\s+/)[0] ?? '')).toBe('node:20-bookworm-slim');
    const copies = runtime.filter((i) => i.getKeyword() === 'COPY') as unknown as { getFlags(): { getName(): string; getValue(): string | null }[] }[];
    expect(copies.length).toBeGreaterThan(0);
    expect(copies.every((c) => c.getFlags().some((f) => f.getName() === 'from' && f.getValue() === build))).toBe(true);
  });

  it('runs as a numeric non-root user under tini, the service by default', () => {
    const user = last('USER')?.getArgumentsContent()?.trim() ?? '';
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
    expect(runtime.some((i) => i.getKeyword() === 'RUN' && /apt-get install[^&]*\btini\b/.test(i.getArgumentsContent() ?? ''))).toBe(true);
    expect(JSON.parse(last('ENTRYPOINT')?.getArgumentsContent() ?? 'null')).toEqual(['/usr/bin/tini', '--']);
    expect(JSON.parse(last('CMD')?.getArgumentsContent() ?? 'null')).toEqual(['node', '--import', 'tsx', 'workers/serve.ts']);
  });

  it("checks /healthz on the worker's METRICS_PORT or the API's PORT", () => {
    const healthcheck = dockerfile.getHEALTHCHECKs().pop();
    expect(healthcheck?.getSubcommand()?.getValue()).toBe('CMD');
    const command = /\bCMD\s+(\[.*\])\s*$/s.exec(healthcheck?.getArgumentsContent() ?? '')?.[1];
    const [program, flag, script] = JSON.parse(command ?? '[]') as string[];
    expect([program, flag]).toEqual(['node', '-e']);
    expect(script).toContain("path:'/healthz'");
    expect(script).toMatch(/ROLE==='worker'\?\(e\.METRICS_PORT\|\|9464\):\(e\.PORT\|\|8080\)/);
    expect(Number(SETTINGS.port.default)).toBe(8080);
    expect(DEFAULT_METRICS_PORT).toBe(9464);
  });

  it('sets only settings of services/platform/config.ts, and listens on every interface', () => {
    const env = Object.fromEntries(runtime.filter((i) => i.getKeyword() === 'ENV').flatMap((i) => (i as unknown as { getProperties(): { getName(): string; getValue(): string | null }[] }).getProperties().map((p) => [p.getName(), p.getValue() ?? ''])));
    expect(Object.keys(env).filter((n) => !SETTING_NAMES.has(n))).toEqual([]);
    expect(env.HOST).toBe('0.0.0.0');
  });
});

// ---- docker-compose.yml -------------------------------------------------------------------

describe('deploy/docker-compose.yml', () => {
  const compose = parse(fs.readFileSync(path.join(ROOT, 'deploy/docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, { image?: string; command?: string[]; environment?: Record<string, string>; depends_on?: Record<string, { condition: string }>; ports?: string[]; container_name?: string }>;
  };
  const { services } = compose;
  const given: Record<string, string> = { BLOB_SIGNING_SECRET: 'a-signing-secret-of-more-than-32-characters' };
  /** Compose's interpolation: ${VAR}, ${VAR:-default}, ${VAR:?message}. */
  const interpolate = (value: string) =>
    value.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, op?: string, rest?: string) => {
      if (given[name]) return given[name];
      if (op === '?') throw new Error(`${name}: ${rest}`);
      return op === '-' ? (rest ?? '') : '';
    });
  const envOf = (name: string) => Object.fromEntries(Object.entries(services[name]?.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]));

  it('has the API, workers, Redis, Postgres, MinIO and a one-shot migration', () => {
    expect(Object.keys(services).sort()).toEqual(['api', 'migrate', 'minio', 'postgres', 'redis', 'worker']);
    expect(services.migrate?.command?.join(' ')).toMatch(/workers\/migrate\.ts$/);
  });

  it('runs Redis with an append-only file and without eviction', () => {
    const command = services.redis?.command?.join(' ') ?? '';
    expect(command).toMatch(/--appendonly yes\b/);
    expect(command).toMatch(/--maxmemory-policy noeviction\b/);
  });

  it('starts the API and the workers after the migration, from one image, workers scalable', () => {
    for (const name of ['api', 'worker']) expect(services[name]?.depends_on?.migrate).toEqual({ condition: 'service_completed_successfully' });
    expect(new Set(['api', 'worker', 'migrate'].map((n) => services[n]?.image)).size).toBe(1);
    // --scale worker=3 needs no fixed name and no host port.
    expect(services.worker?.container_name).toBeUndefined();
    expect(services.worker?.ports).toBeUndefined();
  });

  it('gives each service process settings config.ts accepts, S3 blobs at the MinIO service', () => {
    for (const name of ['api', 'worker', 'migrate']) {
      const env = envOf(name);
      expect(Object.keys(env).filter((n) => !SETTING_NAMES.has(n))).toEqual([]);
      const config = loadConfig(env);
      expect(config.blobDriver).toBe('s3');
      expect(new URL(config.s3?.endpoint ?? '').hostname).toBe('minio');
      expect(new URL(config.redisUrl).hostname).toBe('redis');
      expect(new URL(config.databaseUrl).hostname).toBe('postgres');
      expect(config.role).toBe(name === 'migrate' ? 'all' : name);
    }
  });
});
