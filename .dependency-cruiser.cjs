/**
 * Import directions of DESIGN.md:
 * contract ← platform ← engine ← nodes ← runs ← (api, workers); store, queue and blobs are adapters
 * wired together in process entry points; sdk imports contract and the engine's pure graph checks
 * (so a draft validates offline with the server's own messages); mcp imports sdk and contract,
 * cli those and mcp (`svc mcp`); nothing under services/ imports api or workers.
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
    {
      // runs reaches store, queue and blobs only through the ports it declares in services/runs/ports.ts.
      name: 'runs-through-ports',
      severity: 'error',
      from: {
        path: '^services/runs/',
        pathNot: [
          '^services/runs/ports\\.ts$',
          // Temporary: a store error (InsufficientCreditError) and a blob error (BlobNotFoundError)
          // still caught as classes here, until they become coded AppErrors.
          '^services/runs/start/run-launcher\\.ts$',
          '^services/runs/sweeps/retention-sweeper\\.ts$',
        ],
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
