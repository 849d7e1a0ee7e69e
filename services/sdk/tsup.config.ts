import { defineConfig } from 'tsup';

/**
 * The package is self-contained: the contract's schemas, ajv (their validator) and
 * eventsource-parser are bundled in, so installing it pulls in nothing else and the server's
 * code never comes along (only the modules the SDK imports are bundled).
 */
export default defineConfig({
  entry: { index: 'src/index.ts', node: 'src/node.ts' },
  format: ['esm', 'cjs'],
  target: 'es2022',
  platform: 'neutral',
  // The contract's types are computed from its typebox schemas, so the declarations import
  // typebox's types: the package's one dependency (its code is bundled like the rest).
  dts: true,
  tsconfig: 'tsconfig.build.json',
  noExternal: [/^(?!node:)/],
  external: [/^node:/],
  clean: true,
  sourcemap: true,
  minify: true,
  splitting: false,
  treeshake: true,
  esbuildOptions(options) {
    options.mainFields = ['module', 'main'];
  },
});
