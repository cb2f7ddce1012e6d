import { execFile } from 'node:child_process';

export type GitLabTokenSource = 'GITLAB_TOKEN' | 'glab';

export interface GitLabToken {
  token: string;
  /** Where it came from (safe to log; the token itself never is). */
  source: GitLabTokenSource;
}

export interface ResolveGitLabTokenOptions {
  env?: NodeJS.ProcessEnv;
  /** The GitLab CLI; looked up on the PATH of `env`. */
  glabExecutable?: string;
  /** The GitLab host whose token `glab` is asked for (gitlab.com, or a self-hosted one). */
  hostname: string;
  /** `glab` gets this long before it is killed. */
  timeoutMs?: number;
}

/**
 * The token the GitLab client uses: GITLAB_TOKEN (the variable `glab` itself honours), then the
 * token `glab auth login` stored for the host (`glab config get token --host <host>`; glab has no
 * `auth token` command). Null when neither gives one. `glab` is spawned directly (no shell) with a
 * timeout, so a hung or missing CLI costs at most `timeoutMs`.
 */
export async function resolveGitLabToken(options: ResolveGitLabTokenOptions): Promise<GitLabToken | null> {
  const env = options.env ?? process.env;
  const value = env.GITLAB_TOKEN?.trim();
  if (value) {
    return { source: 'GITLAB_TOKEN', token: value };
  }
  const token = await new Promise<string | null>((resolve) => {
    execFile(
      options.glabExecutable ?? 'glab',
      ['config', 'get', 'token', '--host', options.hostname],
      { encoding: 'utf8', env, maxBuffer: 64 * 1024, timeout: options.timeoutMs ?? 5_000, windowsHide: true },
      // Absent (ENOENT), not logged in (empty or exit 1) or too slow: no token, not an error.
      (error, stdout) => resolve(error ? null : stdout.trim() || null),
    );
  });
  return token && !/\s/.test(token) ? { source: 'glab', token } : null;
}
