// Type-checked lint for the server, the CLIs, the libs, the tests, the benchmarks and the
// dashboard. The rules are the ones that catch real bugs here (a promise nobody awaits, a
// switch that misses a case) rather than style: formatting is Prettier's.
import tseslint from 'typescript-eslint';

const rules = {
  '@typescript-eslint/no-explicit-any': 'error',
  '@typescript-eslint/no-floating-promises': 'error',
  '@typescript-eslint/no-misused-promises': 'error',
  '@typescript-eslint/no-unnecessary-type-assertion': 'error',
  '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
  curly: ['error', 'all'],
  eqeqeq: ['error', 'always', { null: 'ignore' }],
  'no-restricted-properties': ['error', { object: 'it', property: 'only' }, { object: 'describe', property: 'only' }],
};

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'test/agent-clis/**',
      'libs/api-client/src/schema.d.ts',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  {
    files: ['server/**/*.ts', 'cli/**/*.ts', 'libs/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { project: './tsconfig.eslint.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules,
  },
  {
    files: ['dashboard/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { project: './dashboard/tsconfig.eslint.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules,
  },
);
