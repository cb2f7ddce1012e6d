import type { Forge } from '@libs/contracts';

import { configEnvironment, git } from '../core/git/git';

/**
 * A git remote that names a repository on a forge: GitHub (github.com or a GitHub Enterprise host)
 * or GitLab (gitlab.com or a self-hosted one), told apart by the host.
 */
export interface ForgeRemote {
  /** The remote's name in the repository's configuration (`origin`). */
  name: string;
  forge: Forge;
  /** Its URL as configured (before any `insteadOf`), credentials removed: safe to show. */
  url: string;
  /** `https`/`http` (the token goes in an Authorization header) or `ssh` (the person's own keys). */
  scheme: 'https' | 'http' | 'ssh';
  /** Host name, with the port when the URL gives one. */
  host: string;
  /** GitHub's owner; on GitLab the project's groups (`group/subgroup`). */
  owner: string;
  repo: string;
}

/** The repository as its forge names it: `owner/repo`, or GitLab's `group/subgroup/project`. */
export const remotePath = (remote: Pick<ForgeRemote, 'owner' | 'repo'>): string => `${remote.owner}/${remote.repo}`;

/** Where each forge's repositories may live (see gitHubHosts, gitLabHosts). */
export type ForgeHosts = Partial<Record<Forge, readonly string[]>>;

const SEGMENT = /^[A-Za-z0-9_.-]+$/;

/**
 * owner/repo and how to reach them from a remote URL: `https://host/owner/repo(.git)`,
 * `git@host:owner/repo(.git)` (scp-like) or `ssh://[user@]host[:port]/owner/repo(.git)`. Null for
 * anything else (a path, `file://`, a URL with more or fewer path segments). `nested` allows
 * GitLab's subgroups (`group/subgroup/project`, up to 20 groups): `owner` is then the groups' path.
 */
export function parseRemoteUrl(raw: string, nested = false): Omit<ForgeRemote, 'name' | 'forge'> | null {
  const value = raw.trim();
  let scheme: ForgeRemote['scheme'];
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
    scheme = parsed.protocol.slice(0, -1).toLowerCase() as ForgeRemote['scheme'];
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
  if (parts.length < 2 || parts.length > (nested ? 21 : 2)) {
    return null;
  }
  const groups = parts.slice(0, -1);
  const name = parts[parts.length - 1].replace(/\.git$/i, '');
  if (host === '' || !groups.every((group) => SEGMENT.test(group)) || !SEGMENT.test(name) || name === '') {
    return null;
  }
  const owner = groups.join('/');
  return { host, owner, repo: name, scheme, url };
}

/**
 * The remote a pull request is pushed to: `origin` when its URL names a repository on one of
 * `hosts` (github.com, and the configured API's host for GitHub Enterprise), else the first other
 * remote that does, by name. Read from the configuration as written, so a `url.*.insteadOf` the
 * person set (a mirror, a local copy) still decides where git pushes, not which repository it is.
 */
export async function findForgeRemote(top: string, hosts: ForgeHosts): Promise<ForgeRemote | null> {
  return (await forgeRemotes(top, hosts))[0] ?? null;
}

/** Every remote whose URL names a repository on one of GitHub's `hosts`: `origin` first, then by name. */
export function gitHubRemotes(top: string, hosts: readonly string[]): Promise<ForgeRemote[]> {
  return forgeRemotes(top, { github: hosts });
}

/**
 * Every remote whose URL names a repository on one of the forges' hosts: `origin` first, then by
 * name. A host listed for GitHub is GitHub's (a GitHub Enterprise and a GitLab on one host cannot be
 * told apart, and GitHub came first).
 */
export async function forgeRemotes(top: string, hosts: ForgeHosts): Promise<ForgeRemote[]> {
  const out = await git(['config', '--get-regexp', '--null', '^remote\\..*\\.url$'], {
    cwd: top,
    okCodes: [0, 1],
    timeoutMs: 30_000,
  });
  const remotes: ForgeRemote[] = [];
  for (const entry of out.stdout.split('\0')) {
    const newline = entry.indexOf('\n');
    if (newline < 0) {
      continue;
    }
    const key = entry.slice(0, newline);
    const name = key.slice('remote.'.length, -'.url'.length);
    const forge = forgeOfHost(entry.slice(newline + 1), hosts);
    const parsed = forge === null ? null : parseRemoteUrl(entry.slice(newline + 1), forge === 'gitlab');
    if (name !== '' && forge !== null && parsed !== null) {
      remotes.push({ forge, name, ...parsed });
    }
  }
  remotes.sort((a, b) => (a.name === 'origin' ? -1 : b.name === 'origin' ? 1 : a.name.localeCompare(b.name)));
  return remotes;
}

/** Which forge a remote URL's host belongs to, or null (no forge's, or not a URL git and we both read). */
function forgeOfHost(url: string, hosts: ForgeHosts): Forge | null {
  const parsed = parseRemoteUrl(url, true);
  const host = parsed?.host.replace(/:\d+$/, '') ?? null;
  if (host === null) {
    return null;
  }
  if (hosts.github?.includes(host)) {
    return 'github';
  }
  return hosts.gitlab?.includes(host) ? 'gitlab' : null;
}

/**
 * Where a GitLab project may live: the configured API's host only (gitlab.com by default). A
 * self-hosted instance's token must never go to gitlab.com, nor gitlab.com's to another host, so
 * a remote on any other GitLab is nobody's here.
 */
export function gitLabHosts(gitlabApiUrl: string): string[] {
  try {
    return [new URL(gitlabApiUrl).hostname.toLowerCase()];
  } catch {
    return []; // an unparsable gitlabApiUrl: no GitLab remote at all
  }
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
  remote: Pick<ForgeRemote, 'scheme' | 'host'>,
  authorization: string | null,
): Record<string, string> {
  if (remote.scheme === 'ssh') {
    return process.env.GIT_SSH_COMMAND ? {} : { GIT_SSH_COMMAND: 'ssh -o BatchMode=yes' };
  }
  return authorization === null
    ? {}
    : configEnvironment([[`http.${remote.scheme}://${remote.host}/.extraHeader`, authorization]]);
}

/** A web address's host name, lower case ('' when it is not one). */
export function hostOf(url: string): string {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return '';
  }
}
