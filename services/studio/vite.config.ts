/// <reference types="vitest/config" />
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const standIn = (file: string) => fileURLToPath(new URL(`./src/lib/${file}`, import.meta.url));

/**
 * The studio is served by the API from the same origin, at the root (SPEC: the API lives under
 * `/api` of the studio's host). Hashed bundles go under /studio-assets/ so that no file name can
 * shadow an API route; the API serves them as immutable and index.html as no-cache.
 */
export default defineConfig(({ command }) => ({
  plugins: [react()],
  // The production pages forbid generated code, so ajv could never compile there: the build
  // bundles a stand-in that refuses as the browser would (src/lib/ajv-stand-in.ts). Tests and the
  // dev server keep the real one.
  resolve:
    command === 'build'
      ? {
          alias: [
            { find: /^ajv$/, replacement: standIn('ajv-stand-in.ts') },
            { find: /^ajv-formats$/, replacement: standIn('ajv-formats-stand-in.ts') },
          ],
        }
      : {},
  base: '/',
  build: {
    outDir: 'dist',
    assetsDir: 'studio-assets',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 700,
    rolldownOptions: {
      output: {
        // React and the router load with the first screen; the graph editor's canvas library
        // (xyflow, dagre) and YAML only when the editor opens (pages are lazy routes).
        codeSplitting: {
          groups: [
            { name: 'react', test: /node_modules[\\/](react|react-dom|scheduler|react-router)[\\/]/ },
            { name: 'canvas', test: /node_modules[\\/](@xyflow|@dagrejs|d3-[a-z]+|classcat)[\\/]/ },
          ],
        },
      },
    },
  },
  server: { proxy: { '/api': 'http://127.0.0.1:8080' } },
  test: {
    environment: 'jsdom',
    include: ['src/**/*.test.{ts,tsx}'],
    setupFiles: ['src/test-setup.ts'],
  },
}));
