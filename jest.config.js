// Two tiers: unit specs colocated with the code, end-to-end specs in test/ that start the real
// built server as a child process on an ephemeral port with a temporary CODE_FACTORY_HOME.
const transform = { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.spec.json' }] };
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
      testMatch: ['<rootDir>/server/src/**/*.spec.ts', '<rootDir>/cli/src/**/*.spec.ts', '<rootDir>/dashboard/src/**/*.spec.ts'],
      transform,
    },
    {
      displayName: 'e2e',
      moduleNameMapper,
      rootDir: __dirname,
      testEnvironment: 'node',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      transform,
    },
  ],
  testTimeout: 60_000,
};
