/**
 * Makes GitLab the only forge the manager started next has a token for (GitLab's `token`; no
 * GitHub token, and `gh` pointed at an empty `home` so a logged-in machine's is not used either).
 * The clients read process.env when the manager starts. Returns what puts it back.
 */
export function onlyGitLabToken(token: string, home: string): () => void {
  const keys = ['GH_CONFIG_DIR', 'GH_TOKEN', 'GITHUB_TOKEN', 'GITLAB_TOKEN'] as const;
  const saved = Object.fromEntries(keys.map((key) => [key, process.env[key]]));
  Object.assign(process.env, { GH_CONFIG_DIR: home, GH_TOKEN: '', GITHUB_TOKEN: '', GITLAB_TOKEN: token });
  return () => {
    for (const key of keys) {
      if (saved[key] === undefined) {
        delete process.env[key];
      } else {
        process.env[key] = saved[key];
      }
    }
  };
}
