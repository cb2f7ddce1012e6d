import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Hosts every agent run may reach without the person listing them (issue 45): the providers'
 * APIs and logins, GitHub, the hosts of the workspace's git remotes, and the package registries
 * its lock files name. What the person denies still wins.
 */
const PROVIDERS = [
  'api.openai.com',
  'auth.openai.com',
  'chatgpt.com',
  '*.openai.com',
  '*.chatgpt.com',
  'api.anthropic.com',
  'console.anthropic.com',
  '*.anthropic.com',
  'claude.ai',
];

const GITHUB = ['github.com', 'api.github.com', 'codeload.github.com', '*.githubusercontent.com'];

/** A lock file (or manifest) at the workspace's top, and the registries its ecosystem fetches from. */
const REGISTRIES: [file: string, hosts: string[]][] = [
  ['package-lock.json', ['registry.npmjs.org']],
  ['npm-shrinkwrap.json', ['registry.npmjs.org']],
  ['yarn.lock', ['registry.yarnpkg.com', 'registry.npmjs.org']],
  ['pnpm-lock.yaml', ['registry.npmjs.org']],
  ['bun.lockb', ['registry.npmjs.org']],
  ['poetry.lock', ['pypi.org', 'files.pythonhosted.org']],
  ['Pipfile.lock', ['pypi.org', 'files.pythonhosted.org']],
  ['uv.lock', ['pypi.org', 'files.pythonhosted.org']],
  ['requirements.txt', ['pypi.org', 'files.pythonhosted.org']],
  ['Cargo.lock', ['crates.io', 'index.crates.io', 'static.crates.io']],
  ['go.sum', ['proxy.golang.org', 'sum.golang.org']],
  ['Gemfile.lock', ['rubygems.org', 'index.rubygems.org']],
];

/** The host of a git remote URL (`https://host/…`, `ssh://git@host:22/…`, `git@host:owner/repo`), or null. */
export function remoteHost(url: string): string | null {
  const scp = /^[^@/\s]+@([^:/\s]+):(?!\/)/.exec(url);
  if (scp) {
    return scp[1].toLowerCase();
  }
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'file:' || parsed.hostname === '' ? null : parsed.hostname.toLowerCase();
  } catch {
    return null;
  }
}

/** The default allow-list for a workspace: its remotes' URLs, its GitHub API root, its top folder. */
export function defaultAllow(input: { workspaceRoot: string; remoteUrls: string[]; githubApiUrl: string }): string[] {
  const hosts = [...PROVIDERS, ...GITHUB];
  // The configured GitHub API with its port when it names one (GitHub Enterprise, a test's fake on
  // loopback): an agent's `code-factory-cli pr register` asks it.
  try {
    const api = new URL(input.githubApiUrl);
    hosts.push(api.port ? `${api.hostname}:${api.port}` : api.hostname);
  } catch {
    // Not a URL: the configuration refuses those; nothing to add.
  }
  for (const url of input.remoteUrls) {
    const host = remoteHost(url);
    // A remote on this machine (a path, file://, localhost) is reached through git, not the network.
    if (host && host !== 'localhost' && !/^127\./.test(host)) {
      hosts.push(host);
    }
  }
  for (const [file, registries] of REGISTRIES) {
    if (fs.existsSync(path.join(input.workspaceRoot, file))) {
      hosts.push(...registries);
    }
  }
  return [...new Set(hosts)];
}
