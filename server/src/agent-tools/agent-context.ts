import { UsageError } from './usage-error';

/** What Agent Manager puts in a run's environment for `code-factory-cli`. */
export interface AgentContext {
  /** The manager's API base, including `/api`. */
  apiUrl: string;
  requirementId: string;
  sessionId: string;
  /** The run-scoped credential; absent when the manager runs without authentication. */
  token: string | null;
  timeoutMs: number;
}

export const ENVIRONMENT_HELP = `
Environment (set by Agent Manager for every agent run):
  CODE_FACTORY_API_URL             the manager's API, e.g. http://127.0.0.1:4310/api
  CODE_FACTORY_REQUIREMENT_ID      the run's Requirement
  CODE_FACTORY_SESSION_ID          the run's RD session
  CODE_FACTORY_TOKEN               the run's credential
  CODE_FACTORY_TIMEOUT_SECONDS     optional: HTTP timeout per call (default 30)

Output: the server's JSON answer on stdout. On a refusal or error: one line on stderr,
exit code 1.`;

const DEFAULT_TIMEOUT_SECONDS = 30;

/** Reads the context; a missing variable is a one-line error naming it. */
export function readAgentContext(env: NodeJS.ProcessEnv = process.env): AgentContext {
  const missing = ['CODE_FACTORY_API_URL', 'CODE_FACTORY_REQUIREMENT_ID', 'CODE_FACTORY_SESSION_ID'].filter(
    (name) => !env[name]?.trim(),
  );
  if (missing.length > 0) {
    throw new UsageError(
      `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not set: run this inside an Agent Manager agent run, which sets them`,
    );
  }
  const apiUrl = (env.CODE_FACTORY_API_URL as string).trim().replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+(\/.*)?\/api$/.test(apiUrl)) {
    throw new UsageError(`CODE_FACTORY_API_URL must be the manager's API URL ending in /api (got ${apiUrl})`);
  }
  const timeout = env.CODE_FACTORY_TIMEOUT_SECONDS?.trim();
  if (
    timeout !== undefined &&
    timeout !== '' &&
    !(/^\d+$/.test(timeout) && Number(timeout) >= 1 && Number(timeout) <= 3600)
  ) {
    throw new UsageError('CODE_FACTORY_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 3600');
  }
  return {
    apiUrl,
    requirementId: (env.CODE_FACTORY_REQUIREMENT_ID as string).trim(),
    sessionId: (env.CODE_FACTORY_SESSION_ID as string).trim(),
    timeoutMs: (timeout ? Number(timeout) : DEFAULT_TIMEOUT_SECONDS) * 1000,
    token: env.CODE_FACTORY_TOKEN?.trim() || null,
  };
}
