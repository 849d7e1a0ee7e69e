/**
 * The import rule of ARCHITECTURE.md, as the code has it (that page says each rule in words):
 * contract ← platform ← engine ← (store, queue, blobs) and nodes ← runs ← api; composition wires
 * processes from all of them and nothing under services/ imports it; workers/ are the entry points.
 * sdk imports contract and the engine's pure graph checks (so a draft validates offline with the
 * server's own messages); mcp imports sdk and contract, cli those and mcp (`svc mcp`). Inside runs
 * and api, each room (a folder) imports only the rooms named for it below.
 */
const layer = (name, allowed) => ({
  name: `${name}-imports`,
  comment: `services/${name} may import only: ${allowed.join(', ') || 'nothing of ours'}`,
  severity: 'error',
  from: { path: `^services/${name}/` },
  to: {
    path: '^(services|workers)/',
    pathNot: [`^services/${name}/`, ...allowed.map((a) => `^services/${a}/`)],
  },
});

/**
 * A room of `services/<area>/`: a folder that may import, inside its area, only itself, the rooms
 * in `rooms` and the area's shared files in `shared` (file names at the area's root).
 */
const room = (area, name, rooms, shared = []) => ({
  name: `${area}-${name}-room`,
  comment: `services/${area}/${name}/ may import, in services/${area}: ${[...rooms.map((r) => `${r}/`), ...shared].join(', ') || 'nothing outside itself'}`,
  severity: 'error',
  from: { path: `^services/${area}/${name}/` },
  to: {
    path: `^services/${area}/`,
    pathNot: [`^services/${area}/${name}/`, ...rooms.map((r) => `^services/${area}/${r}/`), ...shared.map((f) => `^services/${area}/${f.replace(/\./g, '\\.')}$`)],
  },
});

/** The run core's shared files: the run's context, its lifecycle and the ports it declares. */
const RUNS_SHARED = ['ports.ts', 'run-context-cache.ts', 'run-lifecycle.ts'];

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
    layer('contract', []),
    layer('platform', ['contract']),
    layer('engine', ['contract', 'platform']),
    layer('nodes', ['contract', 'platform', 'engine', 'blobs']),
    layer('store', ['contract', 'platform', 'engine']),
    layer('queue', ['contract', 'platform', 'engine']),
    layer('blobs', ['contract', 'platform']),
    layer('sdk', ['contract', 'engine']),
    {
      // The SDK's main entry point runs in browsers: no Node module, and nothing of the engine
      // that reaches the platform layer (run-inputs' address policy uses node:net). Only the
      // Node entry point (node.ts) may use Node's modules.
      name: 'sdk-browser-safe',
      severity: 'error',
      from: { path: '^services/sdk/src/', pathNot: '^services/sdk/src/node\\.ts$' },
      to: { reachable: true, path: '^services/(platform|nodes|store|queue|runs|blobs)/' },
    },
    {
      name: 'sdk-no-node-modules',
      severity: 'error',
      from: { path: '^services/(sdk/src/(?!node(\\.ts|/))|engine/(validate-workflow|references|mount-separator|connector-values|start-values|workflow-problems|workflow-ref|semver))' },
      to: { dependencyTypes: ['core'] },
    },
    // svc mcp (and the svc-mcp bin) serves the MCP stdio server from the CLI's bundle.
    layer('cli', ['sdk', 'contract', 'mcp']),
    layer('mcp', ['sdk', 'contract']),
    // The studio is a browser client: the SDK, the contract's types, and the engine's pure checks.
    layer('studio', ['sdk', 'contract', 'engine']),
    layer('runs', ['contract', 'platform', 'engine', 'nodes', 'store', 'queue', 'blobs']),
    // The run core's rooms: events ← steps ← (start, sweeps), (start, sweeps) ← (batches, schedules); each may use the shared files.
    room('runs', 'events', [], RUNS_SHARED),
    room('runs', 'steps', ['events'], RUNS_SHARED),
    room('runs', 'start', ['events', 'steps'], RUNS_SHARED),
    room('runs', 'sweeps', ['events', 'steps'], RUNS_SHARED),
    room('runs', 'batches', ['events', 'steps', 'start', 'sweeps'], RUNS_SHARED),
    room('runs', 'schedules', ['events', 'steps', 'start', 'sweeps'], RUNS_SHARED),
    {
      name: 'runs-shared-files',
      comment: "the run core's shared files import no room (the rooms import them); only index.ts gathers the rooms",
      severity: 'error',
      from: { path: '^services/runs/[^/]+\\.ts$', pathNot: '^services/runs/index\\.ts$' },
      to: { path: '^services/runs/[^/]+/' },
    },
    {
      // runs reaches store, queue and blobs only through the ports it declares in services/runs/ports.ts.
      name: 'runs-through-ports',
      severity: 'error',
      from: {
        path: '^services/runs/',
        pathNot: '^services/runs/ports\\.ts$',
      },
      to: { path: '^services/(store|queue|blobs)/' },
    },
    {
      // The ports name the adapters' types; no value of an adapter enters runs.
      name: 'runs-ports-type-only',
      severity: 'error',
      from: { path: '^services/runs/ports\\.ts$' },
      to: { path: '^services/(store|queue|blobs)/', dependencyTypesNot: ['type-only'] },
    },
    layer('api', ['contract', 'platform', 'engine', 'nodes', 'store', 'queue', 'blobs', 'runs', 'mcp']),
    // The API's rooms: pages and auth ← handlers ← invoke ← (http, mcp) ← routes; the root files
    // (app, server, api-limits, index) assemble them, and no room imports those.
    room('api', 'pages', []),
    room('api', 'auth', []),
    room('api', 'handlers', ['auth']),
    room('api', 'invoke', ['auth', 'handlers']),
    room('api', 'http', ['auth', 'handlers', 'invoke']),
    room('api', 'mcp', ['auth', 'handlers', 'invoke']),
    room('api', 'routes', ['auth', 'handlers', 'http', 'invoke', 'pages']),
    {
      name: 'nothing-imports-composition',
      comment: 'services/composition wires processes (adapters chosen, ports filled); only workers/ entry points and tests import it',
      severity: 'error',
      from: { path: '^services/', pathNot: '^services/composition/' },
      to: { path: '^services/composition/' },
    },
    {
      name: 'nothing-imports-workers',
      severity: 'error',
      from: { path: '^services/' },
      to: { path: '^workers/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // The studio's build output (bundles that import each other) is not our source.
    exclude: { path: '(^|/)node_modules/|^services/studio/dist' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
