import { execFile } from 'node:child_process';

export type GitHubTokenSource = 'GITHUB_TOKEN' | 'GH_TOKEN' | 'gh';

export interface GitHubToken {
  token: string;
  /** Where it came from (safe to log; the token itself never is). */
  source: GitHubTokenSource;
}

export interface ResolveGitHubTokenOptions {
  env?: NodeJS.ProcessEnv;
  /** The GitHub CLI; looked up on the PATH of `env`. */
  ghExecutable?: string;
  /** For GitHub Enterprise: `gh auth token --hostname <host>`. Omit for github.com. */
  hostname?: string;
  /** `gh` gets this long before it is killed. */
  timeoutMs?: number;
}

/**
 * The token the client uses: GITHUB_TOKEN, then GH_TOKEN (the variables `gh` itself honours), then
 * `gh auth token` when the GitHub CLI is installed and logged in. Null when none gives one. `gh` is
 * spawned directly (no shell) with a timeout, so a hung or missing CLI costs at most `timeoutMs`.
 */
export async function resolveGitHubToken(options: ResolveGitHubTokenOptions = {}): Promise<GitHubToken | null> {
  const env = options.env ?? process.env;
  for (const source of ['GITHUB_TOKEN', 'GH_TOKEN'] as const) {
    const value = env[source]?.trim();
    if (value) {
      return { source, token: value };
    }
  }
  const args = ['auth', 'token', ...(options.hostname ? ['--hostname', options.hostname] : [])];
  const token = await new Promise<string | null>((resolve) => {
    execFile(
      options.ghExecutable ?? 'gh',
      args,
      { encoding: 'utf8', env, maxBuffer: 64 * 1024, timeout: options.timeoutMs ?? 5_000, windowsHide: true },
      // Absent (ENOENT), not logged in (exit 1) or too slow: no token, not an error.
      (error, stdout) => resolve(error ? null : stdout.trim() || null),
    );
  });
  return token ? { source: 'gh', token } : null;
}
