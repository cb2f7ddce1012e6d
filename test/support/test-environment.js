// Loaded before every end-to-end, integration and fault suite (jest.config.js `setupFiles`), and
// inherited by every manager they start, in-process or as a child process.
//
// No prepared worktrees (issue 48 §6) unless a suite asks for them: with the default of two, every
// manager on a repository would make two working copies in the background, running git and the
// setup command beside what the suite measures, and the sweeper's and disk figures would count
// them. test/worktree-pool.e2e-spec.ts turns the pool on.
process.env.CODE_FACTORY_WORKTREE_POOL ??= '0';

// A manager started in the suite's own process hands its children to the built process spawner, as
// a manager process does (server/src/core/process/spawner.ts): spawning from the test process
// itself, far larger than a manager, made git-heavy suites two to three times slower. `npm test`
// builds the server before these suites run; without a build, children are spawned directly.
process.env.CODE_FACTORY_TEST_BUILT_SPAWNER ??= '1';
