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
 */
export function scrubbedEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !PRIVATE_VARIABLES.test(key)) {
      env[key] = value;
    }
  }
  return env;
}
