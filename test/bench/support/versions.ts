import fs from 'node:fs';
import path from 'node:path';

/**
 * The version in a package's package.json, found by walking up from its entry point: the SDK's
 * `exports` map does not export `./package.json`, so require.resolve cannot name it directly.
 */
export function installedVersion(name: string): string {
  let dir = path.dirname(require.resolve(name));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version: string };
      if (pkg.name === name) return pkg.version;
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json of ${name} above ${require.resolve(name)}`);
    dir = parent;
  }
}
