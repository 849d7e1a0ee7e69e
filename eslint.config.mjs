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
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', __dirname: 'readonly', process: 'readonly', console: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
