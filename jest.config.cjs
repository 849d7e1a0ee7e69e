/** Two projects: unit tests (no I/O) and integration tests (real Redis, Postgres and S3 started by globalSetup). */
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }] };
// The Prisma client is generated as TypeScript into node_modules/.svc-prisma (see prisma/schema.prisma).
const transformIgnorePatterns = ['/node_modules/(?!\\.svc-prisma/)'];
module.exports = {
  // Only read at the top level (a project entry ignores it); integration tests start real servers.
  testTimeout: 30000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      transformIgnorePatterns,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform,
      transformIgnorePatterns,
      // test/e2e: the studio in Chromium against the same real stack; test/faults: the fault suite
      // (its shortened counts here; `make test-faults` runs it alone with FAULTS_FULL=1).
      testMatch: ['<rootDir>/test/integration/**/*.test.ts', '<rootDir>/test/e2e/**/*.test.ts', '<rootDir>/test/faults/**/*.test.ts'],
      // test/faults/full: scenarios only `make test-faults` runs (FAULTS_FULL=1); make test runs the rest shortened.
      // FAULTS_INCLUDE_FULL=1 runs a named one of them at its short counts (while writing it).
      testPathIgnorePatterns: process.env.FAULTS_FULL === '1' || process.env.FAULTS_INCLUDE_FULL === '1' ? ['/node_modules/'] : ['/node_modules/', '<rootDir>/test/faults/full/'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      setupFiles: ['<rootDir>/test/support/load-stack-env.ts'],
    },
  ],
};
