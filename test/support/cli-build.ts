import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const CLI_DIR = path.join(ROOT, 'services/cli');
const BUNDLE = path.join(CLI_DIR, 'dist/svc.js');
const TSUP = path.join(ROOT, 'node_modules/.bin/tsup');
/** Everything tsup bundles into the CLI that can change under a test run. */
const SOURCES = ['services/cli/src', 'services/sdk/src', 'services/mcp', 'services/contract', 'services/engine'].map((dir) => path.join(ROOT, dir));

/** The `svc` executable as npm links it: run it with `node CLI_BIN …`. */
export const CLI_BIN = path.join(CLI_DIR, 'bin/svc.cjs');

/** The local MCP server (`svc-mcp`, the bundle's `mcp` command): run it with `node MCP_BIN`. */
export const MCP_BIN = path.join(CLI_DIR, 'bin/svc-mcp.cjs');

function newestSourceMs(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSourceMs(full));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

/**
 * Rebuilds services/cli/dist/svc.js with tsup when any source it bundles is newer, so tests
 * always drive the CLI as built from the tree they test. The bundle is built into a directory of
 * this process's own and renamed into place: a test file running beside this one never sees
 * half a bundle (tsup cleans its output directory first).
 */
export function ensureCliBuilt(): string {
  const builtMs = fs.existsSync(BUNDLE) ? fs.statSync(BUNDLE).mtimeMs : 0;
  if (builtMs > 0 && Math.max(...SOURCES.map(newestSourceMs)) <= builtMs) return CLI_BIN;
  const outDir = `dist-build-${process.pid}`;
  try {
    execFileSync(TSUP, ['--out-dir', outDir, '--silent'], { cwd: CLI_DIR, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
    fs.mkdirSync(path.dirname(BUNDLE), { recursive: true });
    fs.renameSync(path.join(CLI_DIR, outDir, 'svc.js.map'), `${BUNDLE}.map`);
    fs.renameSync(path.join(CLI_DIR, outDir, 'svc.js'), BUNDLE);
  } catch (err) {
    const e = err as { stderr?: Buffer; stdout?: Buffer; message: string };
    throw new Error(`building the CLI failed: ${e.stderr?.toString() || e.stdout?.toString() || e.message}`);
  } finally {
    fs.rmSync(path.join(CLI_DIR, outDir), { recursive: true, force: true });
  }
  return CLI_BIN;
}
