import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { defaultAllow, remoteHost } from './network-defaults';

describe('the default allow-list', () => {
  it('reads the host of every form of git remote, and none of a local one', () => {
    expect(remoteHost('https://github.com/org/repo.git')).toBe('github.com');
    expect(remoteHost('ssh://git@GitLab.Example.com:2222/org/repo.git')).toBe('gitlab.example.com');
    expect(remoteHost('git@bitbucket.org:org/repo.git')).toBe('bitbucket.org');
    expect(remoteHost('/srv/git/repo.git')).toBeNull();
    expect(remoteHost('file:///srv/git/repo.git')).toBeNull();
    expect(remoteHost('../sibling')).toBeNull();
  });

  it("names the providers, GitHub (the configured API with its port), the remotes' hosts and the lock files' registries", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'am-defaults-'));
    try {
      fs.writeFileSync(path.join(root, 'package-lock.json'), '{}');
      fs.writeFileSync(path.join(root, 'Cargo.lock'), '');
      const hosts = defaultAllow({
        githubApiUrl: 'http://127.0.0.1:8123',
        remoteUrls: ['git@git.example.org:team/app.git', 'https://localhost/x.git', '/srv/repo.git'],
        workspaceRoot: root,
      });
      expect(hosts).toEqual(
        expect.arrayContaining([
          'api.openai.com',
          'api.anthropic.com',
          'github.com',
          '127.0.0.1:8123',
          'git.example.org',
          'registry.npmjs.org',
          'crates.io',
        ]),
      );
      // A loopback GitHub is that one port, never all of loopback; local remotes add nothing.
      expect(hosts).not.toContain('127.0.0.1');
      expect(hosts).not.toContain('localhost');
      expect(hosts).not.toContain('pypi.org');
      expect(new Set(hosts).size).toBe(hosts.length);
    } finally {
      fs.rmSync(root, { force: true, recursive: true });
    }
  });
});
