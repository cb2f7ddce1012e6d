/**
 * Variables of the manager's own configuration (its home, its settings, its database URL and
 * webhook secret), never handed to anything the manager starts on a repository's behalf: agents,
 * their setup and teardown commands, git, the model catalog's listing. The few an agent needs are
 * set explicitly by AgentEnvironmentService. The owner token is never in the manager's
 * environment to begin with: it lives in the token file, hidden from agents.
 */
const PRIVATE_VARIABLES = /^CODE_FACTORY_/;

/**
 * The manager's environment without its own settings: what every agent CLI starts from (its
 * HOME, credentials and provider settings), and what git and the worktree commands run with.
 * `from` is the environment the manager was started with (Runtime.env) where the caller has it.
 */
export function scrubbedEnvironment(from: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(from)) {
    if (value !== undefined && !PRIVATE_VARIABLES.test(key)) {
      env[key] = value;
    }
  }
  return env;
}
