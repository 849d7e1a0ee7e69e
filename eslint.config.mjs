import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '**/dist/', '.data/', '.test-artifacts/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-template-curly-in-string': 'off',
      eqeqeq: ['error', 'always'],
    },
  },
  {
    files: ['services/**/*.ts', 'services/**/*.tsx', 'workers/**/*.ts'],
    // The CLI is a client on the user's machine: its environment (SERVICE_URL, SERVICE_TOKEN,
    // XDG_CONFIG_HOME) is its configuration, read in its own config module only.
    ignores: ['services/platform/config.ts', 'services/cli/src/cli-config.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read settings through services/platform/config.ts (the CLI: services/cli/src/cli-config.ts).' }],
    },
  },
  // One way to each store (services/store/README.md): pg through hot-sql.ts; Prisma's model API;
  // raw SQL through Prisma only where it must share a Prisma transaction and the model API cannot say it.
  {
    files: ['services/**/*.ts', 'services/**/*.tsx', 'workers/**/*.ts'],
    ignores: ['services/store/hot-sql.ts', 'services/store/database.ts', 'services/store/migration-runner.ts', 'services/store/token-changes.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'pg', message: 'Reach Postgres through services/store/hot-sql.ts (the pool) or Prisma; see services/store/README.md.' }] }],
    },
  },
  {
    files: ['services/**/*.ts', 'services/**/*.tsx', 'workers/**/*.ts'],
    ignores: [
      'services/store/prisma-client.ts',
      'services/store/artifact-repository.ts',
      'services/store/device-authorization-repository.ts',
      'services/store/expired-rows.ts',
      'services/store/ledger-repository.ts',
      'services/store/oauth-repository.ts',
      'services/store/organization-repository.ts',
      'services/store/token-repository.ts',
      'services/store/workflow-publish.ts',
      'services/store/workflow-repository.ts',
      'services/store/workflow-resolution.ts',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'MemberExpression[property.name=/^\\$(queryRaw|executeRaw)/]', message: 'No raw SQL through Prisma here: use the model API, or hot-sql.ts for runs, steps and money; see services/store/README.md.' },
        { selector: "CallExpression[callee.name='rawRows']", message: 'No raw SQL through Prisma here: use the model API, or hot-sql.ts for runs, steps and money; see services/store/README.md.' },
      ],
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', __dirname: 'readonly', process: 'readonly', console: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
