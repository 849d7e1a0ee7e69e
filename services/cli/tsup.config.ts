import { defineConfig } from 'tsup';

/**
 * One CommonJS file with everything in it (the SDK, the contract's schemas, commander, yaml, the
 * MCP server of `svc mcp` with the MCP SDK), so `npm install -g` of the packed tarball needs
 * nothing else.
 */
export default defineConfig({
  entry: { svc: 'src/main.ts' },
  format: ['cjs'],
  target: 'node20',
  platform: 'node',
  tsconfig: 'tsconfig.build.json',
  noExternal: [/.*/],
  clean: true,
  sourcemap: true,
  minify: false,
  splitting: false,
});
