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
  const sh = (args: string[], cwd = repo) =>
    execFileSync('git', args, { cwd, env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' }, stdio: 'pipe' });
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
    fs.writeFileSync(path.join(repo, '.git', 'hooks', hook), `#!/bin/sh\necho hook ${hook} >> '${witness}'\n`, {
      mode: 0o755,
    });
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

describe('git(): what it remembers of a repository configuration follows the files', () => {
  const sh = (args: string[], cwd: string) =>
    execFileSync('git', args, { cwd, env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' }, stdio: 'pipe' });
  /** A folder, a witness file, and a script that writes to the witness when run (a clean filter). */
  function scene(): { dir: string; witness: string; script: string } {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'am-git-stamps-')));
    const witness = path.join(dir, 'ran');
    const script = path.join(dir, 'evil.sh');
    fs.writeFileSync(script, `#!/bin/sh\necho "$0 $*" >> '${witness}'\ncat\n`, { mode: 0o755 });
    return { dir, script, witness };
  }
  function repository(at: string, filter?: string): void {
    fs.mkdirSync(at, { recursive: true });
    sh(['init', '-q', '-b', 'main'], at);
    sh(['-c', 'user.name=a', '-c', 'user.email=a@example.com', 'commit', '-q', '--allow-empty', '-m', 'one'], at);
    if (filter) {
      sh(['config', 'filter.evil.clean', filter], at);
    }
  }
  const ran = (witness: string) => (fs.existsSync(witness) ? fs.readFileSync(witness, 'utf8') : '');

  it("a worktree whose .git is pointed at another repository gets that repository's programs neutralised", async () => {
    const { dir, script, witness } = scene();
    repository(path.join(dir, 'clean'));
    const worktree = path.join(dir, 'wt');
    sh(['worktree', 'add', '-q', '-b', 'side', worktree], path.join(dir, 'clean'));
    // Read (and remembered) while the worktree belongs to the clean repository.
    await git(['status', '--porcelain'], { cwd: worktree });
    await git(['status', '--porcelain'], { cwd: worktree });
    // What an agent can write in its worktree: its .git file, and attributes.
    repository(path.join(dir, 'evil'), script);
    fs.writeFileSync(path.join(worktree, '.git'), `gitdir: ${path.join(dir, 'evil', '.git')}\n`);
    fs.writeFileSync(path.join(worktree, '.gitattributes'), '* filter=evil\n');
    fs.writeFileSync(path.join(worktree, 'a.txt'), 'a\n');
    await git(['add', '-A'], { cwd: worktree });
    expect(ran(witness)).toBe('');
    // Plain git does run it there (the test could fail).
    fs.writeFileSync(path.join(worktree, 'b.txt'), 'b\n');
    sh(['add', '-A'], worktree);
    expect(ran(witness)).not.toBe('');
  });

  it('a folder that was no repository and becomes one is read again', async () => {
    const { dir, script, witness } = scene();
    const folder = path.join(dir, 'later');
    fs.mkdirSync(folder);
    expect((await git(['rev-parse', '--git-dir'], { cwd: folder, okCodes: [128] })).code).toBe(128);
    repository(folder, script);
    fs.writeFileSync(path.join(folder, '.gitattributes'), '* filter=evil\n');
    fs.writeFileSync(path.join(folder, 'a.txt'), 'a\n');
    await git(['add', '-A'], { cwd: folder });
    expect(ran(witness)).toBe('');
  });

  it('an include whose file did not exist yet is watched: the file appearing is read', async () => {
    const { dir, script, witness } = scene();
    const repo = path.join(dir, 'repo');
    repository(repo);
    sh(['config', 'include.path', 'later.cfg'], repo);
    await git(['status', '--porcelain'], { cwd: repo });
    await git(['status', '--porcelain'], { cwd: repo });
    fs.writeFileSync(path.join(repo, '.git', 'later.cfg'), `[filter "evil"]\n\tclean = ${script}\n`);
    fs.writeFileSync(path.join(repo, '.gitattributes'), '* filter=evil\n');
    fs.writeFileSync(path.join(repo, 'a.txt'), 'a\n');
    await git(['add', '-A'], { cwd: repo });
    expect(ran(witness)).toBe('');
    fs.writeFileSync(path.join(repo, 'b.txt'), 'b\n');
    sh(['add', '-A'], repo);
    expect(ran(witness)).not.toBe('');
  });

  it('asks git once per command when nothing changed, a folder that is no repository included', async () => {
    const { dir } = scene();
    const bin = path.join(dir, 'bin');
    const log = path.join(dir, 'git.log');
    fs.mkdirSync(bin);
    fs.writeFileSync(
      path.join(bin, 'git'),
      `#!/bin/sh\necho "$*" >> '${log}'\nexec ${execFileSync('sh', ['-c', 'command -v git']).toString().trim()} "$@"\n`,
      { mode: 0o755 },
    );
    const repo = path.join(dir, 'repo');
    repository(repo);
    const plain = path.join(dir, 'plain');
    fs.mkdirSync(plain);
    const saved = process.env.PATH;
    process.env.PATH = `${bin}:${saved}`;
    try {
      for (const cwd of [repo, plain]) {
        // Warm: a repository's first read stamps the files it found, the second is trusted.
        await Promise.all([1, 2, 3].map(() => git(['rev-parse', '--show-toplevel'], { cwd, okCodes: [0, 128] })));
        await git(['rev-parse', '--show-toplevel'], { cwd, okCodes: [0, 128] });
        fs.rmSync(log, { force: true });
        await Promise.all([1, 2, 3].map(() => git(['rev-parse', '--show-toplevel'], { cwd, okCodes: [0, 128] })));
        expect({ cwd, started: fs.readFileSync(log, 'utf8').trim().split('\n') }).toEqual({
          cwd,
          started: ['rev-parse --show-toplevel', 'rev-parse --show-toplevel', 'rev-parse --show-toplevel'],
        });
      }
    } finally {
      process.env.PATH = saved;
    }
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
          .filter(({ line }) =>
            /\b(spawn|spawnSync|execFile|execFileSync|exec|execSync|runBounded)\(\s*['"`]git\b/.test(line),
          )
          .map(({ where }) => where),
      );
    expect(offences).toEqual([]);
  });
});
