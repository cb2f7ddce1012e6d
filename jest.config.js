// Two tiers: unit specs colocated with the code, end-to-end specs in test/ that start the real
// built server as a child process on an ephemeral port with a temporary CODE_FACTORY_HOME.
// Octokit and some of its dependencies (before-after-hook, universal-user-agent, the content-type@3
// nested under @octokit/request) ship only ES modules. Node 20.19+ `require()`s them natively, so the
// built server needs nothing, but Jest's module loader cannot; those packages alone are transpiled to
// CommonJS by ts-jest (`allowJs`, isolated per file, no type check). Specs stay in-process and the
// suite needs no `--experimental-vm-modules`. Angular (`.mjs` only) is there for the dashboard
// stores' specs, which run signals and `inject()` without a browser.
const ESM_PACKAGES = ['@angular', '@octokit', 'before-after-hook', 'content-type', 'universal-user-agent'];
const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.spec.json' }],
  [`/node_modules/(${ESM_PACKAGES.join('|')})/.+\\.m?js$`]: [
    'ts-jest',
    { tsconfig: { allowJs: true, isolatedModules: true, module: 'commonjs', target: 'ES2022' } },
  ],
};
const transformIgnorePatterns = [`/node_modules/(?!(${ESM_PACKAGES.join('|')})/)`];
const moduleNameMapper = {
  '^@libs/contracts$': '<rootDir>/libs/contracts/src/index.ts',
  '^@libs/api-client$': '<rootDir>/libs/api-client/src/index.ts',
  '^@server/(.*)$': '<rootDir>/server/src/$1',
};

module.exports = {
  projects: [
    {
      displayName: 'unit',
      moduleNameMapper,
      rootDir: __dirname,
      testEnvironment: 'node',
      testMatch: [
        '<rootDir>/server/src/**/*.spec.ts',
        '<rootDir>/cli/src/**/*.spec.ts',
        '<rootDir>/dashboard/src/**/*.spec.ts',
      ],
      transform,
      transformIgnorePatterns,
    },
    {
      displayName: 'e2e',
      moduleNameMapper,
      setupFiles: ['<rootDir>/test/support/test-environment.js'],
      rootDir: __dirname,
      testEnvironment: 'node',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      transform,
      transformIgnorePatterns,
    },
    {
      // Services and repositories on a temporary SQLite file, no HTTP: architecture §3 proven directly.
      displayName: 'integration',
      moduleNameMapper,
      setupFiles: ['<rootDir>/test/support/test-environment.js'],
      rootDir: __dirname,
      testEnvironment: 'node',
      testMatch: ['<rootDir>/test/integration/**/*.int-spec.ts'],
      transform,
      transformIgnorePatterns,
    },
    {
      // Fault injection (kill -9, misbehaving agents, a full disk, GitHub down): `npm run test:faults`; also part of `npm test`.
      displayName: 'faults',
      moduleNameMapper,
      setupFiles: ['<rootDir>/test/support/test-environment.js'],
      rootDir: __dirname,
      testEnvironment: 'node',
      testMatch: ['<rootDir>/test/faults/**/*.fault-spec.ts'],
      transform,
      transformIgnorePatterns,
    },
  ],
  testTimeout: 60_000,
};
