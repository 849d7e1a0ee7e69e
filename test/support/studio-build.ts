import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');
const STUDIO_DIR = path.join(ROOT, 'services/studio');
/** Where the API serves the studio from (its STUDIO_DIR default). */
export const STUDIO_DIST = path.join(STUDIO_DIR, 'dist');
const VITE = path.join(ROOT, 'node_modules/.bin/vite');
/** Everything Vite bundles into the studio that can change under a test run. */
const SOURCES = ['services/studio/src', 'services/studio/index.html', 'services/studio/vite.config.ts', 'services/sdk/src', 'services/contract', 'services/engine'].map((p) => path.join(ROOT, p));

function newestMs(target: string): number {
  if (!fs.existsSync(target)) return 0;
  const stat = fs.statSync(target);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = 0;
  for (const entry of fs.readdirSync(target)) newest = Math.max(newest, newestMs(path.join(target, entry)));
  return newest;
}

/**
 * Rebuilds services/studio/dist with Vite when any source it bundles is newer than its index.html,
 * so browser tests drive the studio as built from the tree they test (`make test` builds it first;
 * this covers a plain `jest` run). Built beside and swapped in by renames, so the directory is
 * never half written. Run once, from the integration project's global set-up.
 */
export async function ensureStudioBuilt(): Promise<void> {
  const index = path.join(STUDIO_DIST, 'index.html');
  const builtMs = fs.existsSync(index) ? fs.statSync(index).mtimeMs : 0;
  if (builtMs > 0 && Math.max(...SOURCES.map(newestMs)) <= builtMs) return;
  const outDir = path.join(STUDIO_DIR, `dist-build-${process.pid}`);
  const oldDir = path.join(STUDIO_DIR, `dist-old-${process.pid}`);
  try {
    await promisify(execFile)(VITE, ['build', '--outDir', outDir, '--emptyOutDir', '--logLevel', 'error'], { cwd: STUDIO_DIR, timeout: 180_000 });
    try {
      if (fs.existsSync(STUDIO_DIST)) fs.renameSync(STUDIO_DIST, oldDir);
      fs.renameSync(outDir, STUDIO_DIST);
    } catch (err) {
      // Another test run swapped its own build in at the same moment: that one serves.
      if (!fs.existsSync(index)) throw err;
    }
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`building the studio failed: ${e.stderr || e.stdout || e.message}`);
  } finally {
    fs.rmSync(outDir, { recursive: true, force: true });
    fs.rmSync(oldDir, { recursive: true, force: true });
  }
}
