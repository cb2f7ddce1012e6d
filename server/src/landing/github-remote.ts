import { configEnvironment, git } from '../core/git/git';

/** A git remote that names a repository on GitHub (github.com or a GitHub Enterprise host). */
export interface GitHubRemote {
  /** The remote's name in the repository's configuration (`origin`). */
  name: string;
  /** Its URL as configured (before any `insteadOf`), credentials removed: safe to show. */
  url: string;
  /** `https`/`http` (the token goes in an Authorization header) or `ssh` (the person's own keys). */
  scheme: 'https' | 'http' | 'ssh';
  /** Host name, with the port when the URL gives one. */
  host: string;
  owner: string;
  repo: string;
}

const SEGMENT = /^[A-Za-z0-9_.-]+$/;

/**
 * owner/repo and how to reach them from a remote URL: `https://host/owner/repo(.git)`,
 * `git@host:owner/repo(.git)` (scp-like) or `ssh://[user@]host[:port]/owner/repo(.git)`. Null for
 * anything else (a path, `file://`, a URL with more or fewer path segments).
 */
export function parseRemoteUrl(raw: string): Omit<GitHubRemote, 'name'> | null {
  const value = raw.trim();
  let scheme: GitHubRemote['scheme'];
  let host: string;
  let path: string;
  let url = value;
  const scp = /^(?:[^@/\s]+@)?([A-Za-z0-9.-]+):(?!\/\/)([^\s]+)$/.exec(value);
  if (/^(https?|ssh):\/\//i.test(value)) {
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      return null;
    }
    scheme = parsed.protocol.slice(0, -1).toLowerCase() as GitHubRemote['scheme'];
    host = parsed.host.toLowerCase();
    path = decodeURIComponent(parsed.pathname);
    if (parsed.password !== '' || (parsed.username !== '' && scheme !== 'ssh')) {
      parsed.username = '';
      parsed.password = '';
      url = parsed.toString();
    }
  } else if (scp) {
    scheme = 'ssh';
    host = scp[1].toLowerCase();
    path = scp[2];
  } else {
    return null;
  }
  const parts = path.replace(/^\/+/, '').replace(/\/+$/, '').split('/');
  if (parts.length !== 2) {
    return null;
  }
  const [owner, name] = [parts[0], parts[1].replace(/\.git$/i, '')];
  if (host === '' || !SEGMENT.test(owner) || !SEGMENT.test(name) || name === '') {
    return null;
  }
  return { host, owner, repo: name, scheme, url };
}

/**
 * The remote a pull request is pushed to: `origin` when its URL names a repository on one of
 * `hosts` (github.com, and the configured API's host for GitHub Enterprise), else the first other
 * remote that does, by name. Read from the configuration as written, so a `url.*.insteadOf` the
 * person set (a mirror, a local copy) still decides where git pushes, not which repository it is.
 */
export async function findGitHubRemote(top: string, hosts: readonly string[]): Promise<GitHubRemote | null> {
  return (await gitHubRemotes(top, hosts))[0] ?? null;
}

/** Every remote whose URL names a repository on one of `hosts`: `origin` first, then by name. */
export async function gitHubRemotes(top: string, hosts: readonly string[]): Promise<GitHubRemote[]> {
  const out = await git(['config', '--get-regexp', '--null', '^remote\\..*\\.url$'], {
    cwd: top,
    okCodes: [0, 1],
    timeoutMs: 30_000,
  });
  const remotes: GitHubRemote[] = [];
  for (const entry of out.stdout.split('\0')) {
    const newline = entry.indexOf('\n');
    if (newline < 0) {
      continue;
    }
    const key = entry.slice(0, newline);
    const name = key.slice('remote.'.length, -'.url'.length);
    const parsed = parseRemoteUrl(entry.slice(newline + 1));
    if (name !== '' && parsed !== null && hosts.includes(parsed.host.replace(/:\d+$/, ''))) {
      remotes.push({ name, ...parsed });
    }
  }
  remotes.sort((a, b) => (a.name === 'origin' ? -1 : b.name === 'origin' ? 1 : a.name.localeCompare(b.name)));
  return remotes;
}

/** Where a GitHub repository may live: github.com, and the configured API's host (GitHub Enterprise, tests). */
export function gitHubHosts(githubApiUrl: string): string[] {
  const hosts = ['github.com'];
  try {
    const api = new URL(githubApiUrl).hostname.toLowerCase();
    if (api !== 'api.github.com' && !hosts.includes(api)) {
      hosts.push(api);
    }
  } catch {
    // An unparsable githubApiUrl: only github.com (doctor names the setting).
  }
  return hosts;
}

/**
 * What git's environment needs to push to or fetch from a remote the manager reaches for a person:
 * over SSH their own keys in batch mode (no terminal to ask at: an unknown host key or a passphrase
 * fails instead of hanging); over HTTP(S) a token, when there is one, as an `http.<url>.extraHeader`
 * scoped to that host (never on a command line); nothing else.
 */
export function remoteEnvironment(
  remote: Pick<GitHubRemote, 'scheme' | 'host'>,
  authorization: string | null,
): Record<string, string> {
  if (remote.scheme === 'ssh') {
    return process.env.GIT_SSH_COMMAND ? {} : { GIT_SSH_COMMAND: 'ssh -o BatchMode=yes' };
  }
  return authorization === null
    ? {}
    : configEnvironment([[`http.${remote.scheme}://${remote.host}/.extraHeader`, authorization]]);
}
