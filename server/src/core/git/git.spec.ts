import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { git, neutralValue } from './git';

const SERVER = path.resolve(__dirname, '..', '..');

/** A repository whose own configuration names a program for every way git can be made to run one. */
function plantedRepository(): { repo: string; witness: string; worktree: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-git-guard-'));
  const repo = path.join(dir, 'repo');
  const witness = path.join(dir, 'ran');
  const sh = (args: string[], cwd = repo) => execFileSync('git', args, { cwd, env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' }, stdio: 'pipe' });
  fs.mkdirSync(repo);
  sh(['init', '-q', '-b', 'main']);
  sh(['config', 'user.email', 'a@example.com']);
  sh(['config', 'user.name', 'a']);
  fs.writeFileSync(path.join(repo, 'a.txt'), 'one\n');
  sh(['add', '.']);
  sh(['commit', '-qm', 'one']);
  const script = path.join(dir, 'evil.sh');
  fs.writeFileSync(script, `#!/bin/sh\necho "$0 $*" >> '${witness}'\nenv >> '${witness}'\ncat\n`, { mode: 0o755 });
  for (const hook of ['post-checkout', 'pre-commit', 'post-commit', 'reference-transaction', 'post-index-change']) {
    fs.writeFileSync(path.join(repo, '.git', 'hooks', hook), `#!/bin/sh\necho hook ${hook} >> '${witness}'\n`, { mode: 0o755 });
  }
  for (const [key, value] of [
    ['core.fsmonitor', script],
    ['diff.evil.textconv', script],
    ['diff.evil.command', script],
    ['filter.evil.clean', script],
    ['filter.evil.smudge', script],
    ['filter.evil.required', 'true'],
    ['filter.a=b.clean', script],
    ['merge.evil.driver', script],
    ['core.pager', script],
    ['credential.helper', script],
  ]) {
    sh(['config', key, value]);
  }
  fs.writeFileSync(path.join(repo, '.gitattributes'), '* diff=evil filter=evil merge=evil\n');
  fs.writeFileSync(path.join(repo, 'a.txt'), 'two\n');
  const worktree = path.join(dir, 'wt');
  return { repo, witness, worktree };
}

describe('git(): what a repository configures never runs in the manager', () => {
  const before = { ...process.env };
  beforeAll(() => {
    process.env.CODE_FACTORY_DATABASE_URL = 'postgres://user:secret@localhost/db';
  });
  afterAll(() => {
    process.env = before;
  });

  it('runs no hook, fsmonitor, textconv, external diff, filter, merge driver or pager, and nothing it starts sees the manager settings', async () => {
    const { repo, witness, worktree } = plantedRepository();
    await git(['status', '--porcelain'], { cwd: repo });
    const diff = await git(['diff', 'HEAD'], { cwd: repo });
    expect(diff.stdout).toContain('+two');
    await git(['add', '-A'], { cwd: repo });
    await git(['-c', 'user.name=m', '-c', 'user.email=m@example.com', 'commit', '-qm', 'two'], { cwd: repo });
    await git(['log', '-p', '-1'], { cwd: repo });
    await git(['show', 'HEAD'], { cwd: repo });
    await git(['worktree', 'add', '-q', '-b', 'side', worktree, 'HEAD~1'], { cwd: repo });
    await git(['merge-tree', '--write-tree', 'main', 'side'], { cwd: repo, okCodes: [0, 1] });
    expect(fs.existsSync(witness) ? fs.readFileSync(witness, 'utf8') : '').toBe('');
    // The same repository run by plain git does run them (the test could fail).
    execFileSync('git', ['diff', 'HEAD~1'], { cwd: repo, env: { ...process.env, GIT_PAGER: '' }, stdio: 'pipe' });
    expect(fs.readFileSync(witness, 'utf8')).not.toBe('');
  });

  it('neutralises per-name programs and leaves other settings alone', () => {
    expect(neutralValue('filter.lfs.process', 'git-lfs filter-process')).toBe('');
    expect(neutralValue('filter.x.required', 'true')).toBe('false');
    expect(neutralValue('merge.x.driver', 'cmd %O')).toBe('false');
    expect(neutralValue('remote.origin.uploadpack', 'evil')).toBe('git-upload-pack');
    expect(neutralValue('submodule.s.update', '!evil')).toBe('checkout');
    expect(neutralValue('submodule.s.update', 'rebase')).toBeNull();
    expect(neutralValue('credential.helper', 'store')).toBe('');
    expect(neutralValue('credential.https://example.com.helper', 'store')).toBe('');
    expect(neutralValue('user.name', 'x')).toBeNull();
    expect(neutralValue('core.autocrlf', 'true')).toBeNull();
  });
});

/** Every file of the server that starts a process, and what it starts. */
function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      return sources(file);
    }
    return /\.ts$/.test(entry.name) && !/\.spec\.ts$/.test(entry.name) ? [file] : [];
  });
}

describe('one git runner', () => {
  it('starts git only in git.ts, so that no call site can forget the guards', () => {
    const files = [...sources(SERVER), ...sources(path.resolve(SERVER, '../../cli/src'))];
    expect(files.length).toBeGreaterThan(100);
    const offences = files
      .filter((file) => file !== path.join(SERVER, 'core', 'git', 'git.ts'))
      .flatMap((file) =>
        fs
          .readFileSync(file, 'utf8')
          .split('\n')
          .map((line, i) => ({ line, where: `${path.relative(SERVER, file)}:${i + 1}` }))
          .filter(({ line }) => /\b(spawn|spawnSync|execFile|execFileSync|exec|execSync|runBounded)\(\s*['"`]git\b/.test(line))
          .map(({ where }) => where),
      );
    expect(offences).toEqual([]);
  });
});
