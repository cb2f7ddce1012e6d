import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import {
  AgentRepositoryRefused,
  configSection,
  configValue,
  createAgentRepository,
  followInAgentRepository,
  importBranch,
  inspectAgentRepository,
  snapshotWork,
} from './agent-repository';
import { convertLinkedWorktree, linkedEntry } from './linked-worktree-conversion';

// Issue 44 with real git: an agent's own repository, what the manager imports from it, and what
// it refuses. Every hostile change below is one an agent can make from its own shell.

const IDENTITY = { GIT_AUTHOR_EMAIL: 't@t', GIT_AUTHOR_NAME: 't', GIT_COMMITTER_EMAIL: 't@t', GIT_COMMITTER_NAME: 't' };
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...IDENTITY },
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();

describe('an agent repository', () => {
  let base: string;
  let person: string;
  let common: string;
  let agent: string;
  let start: string;
  const branch = 'agent/work-1a2b3c4d';

  beforeEach(async () => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'am-agent-repo-'));
    person = path.join(base, 'person');
    common = path.join(person, '.git');
    agent = path.join(base, 'agent');
    fs.mkdirSync(person);
    git(person, 'init', '-q', '-b', 'main');
    git(person, 'remote', 'add', 'origin', 'https://example.com/o/r "q".git');
    fs.mkdirSync(path.join(person, 'src'));
    fs.writeFileSync(path.join(person, 'src', 'a.txt'), 'a\n');
    fs.writeFileSync(path.join(person, '.gitignore'), 'node_modules/\n*.log\n');
    git(person, 'add', '-A');
    git(person, 'commit', '-q', '-m', 'first');
    start = git(person, 'rev-parse', 'HEAD');
    git(person, 'branch', branch);
    await createAgentRepository({
      base: { ref: 'main', sha: start },
      branch,
      env: {},
      personCommonDir: common,
      personTop: person,
      snapshotIndex: path.join(base, 'index'),
      start,
      target: agent,
    });
  });

  afterEach(() => {
    fs.rmSync(base, { force: true, recursive: true });
  });

  const commitInAgent = (file: string, text: string) => {
    fs.writeFileSync(path.join(agent, file), text);
    git(agent, 'add', '-A');
    git(agent, 'commit', '-q', '-m', `agent: ${file}`);
    return git(agent, 'rev-parse', 'HEAD');
  };

  it("is a repository of its own: its own refs, index and empty hooks, the person's objects borrowed, remotes copied", () => {
    expect(fs.statSync(path.join(agent, '.git')).isDirectory()).toBe(true);
    expect(fs.readdirSync(path.join(agent, '.git', 'hooks'))).toEqual([]);
    expect(git(agent, 'symbolic-ref', 'HEAD')).toBe(`refs/heads/${branch}`);
    expect(git(agent, 'rev-parse', 'main')).toBe(start);
    expect(git(agent, 'status', '--porcelain')).toBe('');
    expect(git(agent, 'config', 'remote.origin.url')).toBe('https://example.com/o/r "q".git');
    expect(fs.readFileSync(path.join(agent, 'src', 'a.txt'), 'utf8')).toBe('a\n');
    // Its objects are the person's, borrowed: nothing copied.
    expect(git(agent, 'count-objects', '-v')).toMatch(/^count: 0$/m);
  });

  it('lets the agent do everything git allows in it, leaving the person untouched', () => {
    const personRefs = git(person, 'for-each-ref');
    const b = commitInAgent('b.txt', 'b\n');
    commitInAgent('c.txt', 'c\n');
    git(agent, 'tag', 'v1');
    git(agent, 'tag', '-d', 'v1');
    fs.writeFileSync(path.join(agent, 'b.txt'), 'stashed\n');
    git(agent, 'stash');
    git(agent, 'stash', 'pop');
    git(agent, 'checkout', '--', 'b.txt');
    git(agent, 'rebase', '-q', '--onto', 'main', b);
    git(agent, 'cherry-pick', b);
    git(agent, 'gc', '-q');
    git(agent, 'worktree', 'add', '-q', path.join(base, 'agent-own-worktree'), '-b', 'side');
    expect(git(agent, 'status', '--porcelain')).toBe('');
    expect(git(person, 'for-each-ref')).toBe(personRefs);
  });

  it("imports the branch into the person's repository, checked, and that branch only", async () => {
    const head = commitInAgent('b.txt', 'b\n');
    git(agent, 'branch', 'other');
    git(agent, 'tag', 'sneaky');
    expect(await importBranch(person, common, agent, branch)).toBe(head);
    expect(git(person, 'rev-parse', branch)).toBe(head);
    expect(git(person, 'for-each-ref', '--format=%(refname)')).not.toMatch(/other|sneaky/);
    // A branch deleted in the agent's repository imports as nothing (the caller keeps the last one).
    git(agent, 'checkout', '-q', '--detach');
    git(agent, 'branch', '-D', branch);
    expect(await importBranch(person, common, agent, branch)).toBeNull();
    expect(git(person, 'rev-parse', branch)).toBe(head);
  });

  it('refuses an object whose content is not what its name says, and leaves the branch where it was', async () => {
    const good = commitInAgent('b.txt', 'b\n');
    expect(await importBranch(person, common, agent, branch)).toBe(good);
    fs.writeFileSync(path.join(agent, 'c.txt'), 'what was reviewed\n');
    git(agent, 'add', 'c.txt');
    git(agent, 'commit', '-q', '-m', 'c');
    const blob = git(agent, 'rev-parse', 'HEAD:c.txt');
    const evil = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: agent, input: 'something else\n' })
      .toString()
      .trim();
    const file = path.join(agent, '.git', 'objects', blob.slice(0, 2), blob.slice(2));
    fs.chmodSync(file, 0o644);
    fs.copyFileSync(path.join(agent, '.git', 'objects', evil.slice(0, 2), evil.slice(2)), file);
    await expect(importBranch(person, common, agent, branch)).rejects.toBeInstanceOf(AgentRepositoryRefused);
    expect(git(person, 'rev-parse', branch)).toBe(good);
  });

  it("ignores replace refs: what is imported is each object's own content", async () => {
    const head = commitInAgent('b.txt', 'reviewed\n');
    const other = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: agent, input: 'replaced\n' })
      .toString()
      .trim();
    git(agent, 'replace', git(agent, 'rev-parse', 'HEAD:b.txt'), other);
    expect(git(agent, 'show', 'HEAD:b.txt')).toBe('replaced');
    expect(await importBranch(person, common, agent, branch)).toBe(head);
    expect(git(person, '--no-replace-objects', 'show', `${branch}:b.txt`)).toBe('reviewed');
    expect(git(person, 'for-each-ref', 'refs/replace')).toBe('');
  });

  it.each([
    [
      'a FIFO at objects/info/alternates',
      (gitDir: string) => (
        fs.rmSync(path.join(gitDir, 'objects/info/alternates')),
        execFileSync('mkfifo', [path.join(gitDir, 'objects/info/alternates')])
      ),
    ],
    [
      'a FIFO among its objects',
      (gitDir: string) => execFileSync('mkfifo', [path.join(gitDir, 'objects', 'pack', 'pack-x.idx')]),
    ],
    [
      'a symlink among its refs',
      (gitDir: string) =>
        fs.symlinkSync(path.join(common, 'refs', 'heads', 'main'), path.join(gitDir, 'refs', 'heads', 'evil')),
    ],
    ['a commondir', (gitDir: string) => fs.writeFileSync(path.join(gitDir, 'commondir'), `${common}\n`)],
    [
      'alternates pointed elsewhere',
      (gitDir: string) => fs.writeFileSync(path.join(gitDir, 'objects/info/alternates'), '/tmp/elsewhere/objects\n'),
    ],
    [
      'a .git that is a link',
      (gitDir: string) => (fs.renameSync(gitDir, `${gitDir}.real`), fs.symlinkSync(`${gitDir}.real`, gitDir)),
    ],
  ])('refuses %s without reading it (no git hangs on it)', async (_what, plant) => {
    commitInAgent('b.txt', 'b\n');
    fs.mkdirSync(path.join(agent, '.git', 'objects', 'pack'), { recursive: true });
    plant(path.join(agent, '.git'));
    const started = Date.now();
    await expect(inspectAgentRepository(agent, common)).rejects.toBeInstanceOf(AgentRepositoryRefused);
    await expect(importBranch(person, common, agent, branch)).rejects.toThrow(
      /agent's repository|not the agent's repository/,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(git(person, 'rev-parse', branch)).toBe(start);
  });

  it('snapshots the files as one commit on the head: tracked and untracked, not ignored or linked ones; the same files give the same commit', async () => {
    const index = path.join(base, 'index');
    const spec = {
      head: start,
      index,
      indexOnHead: false,
      links: ['shared-link'],
      message: 'Uncommitted work',
      personCommonDir: common,
      personTop: person,
      top: agent,
    };
    expect(await snapshotWork(spec)).toEqual({ dirty: false, work: start });
    fs.writeFileSync(path.join(agent, 'src', 'a.txt'), 'changed\n');
    fs.writeFileSync(path.join(agent, 'new.txt'), 'new\n');
    fs.writeFileSync(path.join(agent, 'debug.log'), 'ignored\n');
    fs.mkdirSync(path.join(agent, 'node_modules'));
    fs.writeFileSync(path.join(agent, 'node_modules', 'x.js'), 'ignored\n');
    fs.symlinkSync(person, path.join(agent, 'shared-link'));
    execFileSync('mkfifo', [path.join(agent, 'a-fifo')]);
    // What the agent stages is not what is read: the files are.
    fs.writeFileSync(path.join(agent, 'staged.txt'), 'staged\n');
    git(agent, 'add', 'staged.txt');
    fs.writeFileSync(path.join(agent, 'staged.txt'), 'then changed\n');
    const first = await snapshotWork(spec);
    expect(first.dirty).toBe(true);
    expect(git(person, 'diff', '--name-only', start, first.work).split('\n').sort()).toEqual([
      'new.txt',
      'src/a.txt',
      'staged.txt',
    ]);
    expect(git(person, 'show', `${first.work}:staged.txt`)).toBe('then changed');
    expect(git(person, 'log', '-1', '--format=%an <%ae> %s', first.work)).toBe(
      'Agent Manager <agent-manager@localhost> Uncommitted work',
    );
    expect(await snapshotWork({ ...spec, indexOnHead: true })).toEqual(first);
    fs.rmSync(path.join(base, 'index'));
    expect(await snapshotWork(spec)).toEqual(first);
  });

  it('sees every file made or removed right after a snapshot, in folders it has read before (its untracked cache)', async () => {
    const spec = {
      head: start,
      index: path.join(base, 'index-untracked'),
      indexOnHead: true,
      links: [],
      message: 'Uncommitted work',
      personCommonDir: common,
      personTop: person,
      top: agent,
    };
    await snapshotWork({ ...spec, indexOnHead: false });
    const names = (work: string) => git(person, 'ls-tree', '-r', '--name-only', work).split('\n');
    // Made within the same second as the snapshot before, at the top, in a folder read before, and deeper.
    for (const [k, file] of [
      'quick-1.txt',
      path.join('src', 'quick-2.txt'),
      path.join('src', 'deep', 'quick-3.txt'),
    ].entries()) {
      fs.mkdirSync(path.dirname(path.join(agent, file)), { recursive: true });
      fs.writeFileSync(path.join(agent, file), `${k}\n`);
      const { work } = await snapshotWork(spec);
      expect(names(work)).toContain(file.split(path.sep).join('/'));
    }
    fs.rmSync(path.join(agent, 'src', 'quick-2.txt'));
    const { work } = await snapshotWork(spec);
    expect(names(work)).not.toContain('src/quick-2.txt');
    expect(names(work)).toContain('src/deep/quick-3.txt');
    for (const file of ['quick-1.txt', path.join('src', 'deep')]) {
      fs.rmSync(path.join(agent, file), { force: true, recursive: true });
    }
  });

  it("follows a land in the agent's repository: pending work absorbed, then the branch moved, only from the head that landed", async () => {
    const head = commitInAgent('b.txt', 'b\n');
    await importBranch(person, common, agent, branch);
    fs.writeFileSync(path.join(agent, 'pending.txt'), 'pending\n');
    const { work } = await snapshotWork({
      head,
      index: path.join(base, 'index'),
      indexOnHead: false,
      links: [],
      message: 'pending',
      personCommonDir: common,
      personTop: person,
      top: agent,
    });
    expect(await followInAgentRepository(agent, common, { absorb: work, head, to: null })).toBe(true);
    expect(git(agent, 'rev-parse', 'HEAD')).toBe(work);
    expect(git(agent, 'status', '--porcelain')).toBe('');
    expect(await followInAgentRepository(agent, common, { absorb: null, head, to: start })).toBe(false);
    expect(git(agent, 'rev-parse', 'HEAD')).toBe(work);
  });

  it('writes configuration values and sections that git reads back as they were', () => {
    const file = path.join(base, 'config');
    const value = 'a "quoted" \\ value\twith tab';
    fs.writeFileSync(file, `${configSection('remote', 'we"ird\\name')}\n\turl = ${configValue(value)}\n`);
    expect(execFileSync('git', ['config', '--file', file, '--get', 'remote.we"ird\\name.url']).toString()).toBe(
      `${value}\n`,
    );
  });
});

describe('a linked worktree of before issue 44', () => {
  it('becomes an own repository in place: same files, staged work and branch, its entry gone from the person', async () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'am-convert-'));
    try {
      const person = path.join(base, 'person');
      fs.mkdirSync(person);
      git(person, 'init', '-q', '-b', 'main');
      fs.writeFileSync(path.join(person, 'a.txt'), 'a\n');
      git(person, 'add', '-A');
      git(person, 'commit', '-q', '-m', 'first');
      const target = path.join(base, 'wt');
      git(person, 'worktree', 'add', '-q', '-b', 'agent/x', target);
      fs.writeFileSync(path.join(target, 'b.txt'), 'b\n');
      git(target, 'add', 'b.txt');
      git(target, 'commit', '-q', '-m', 'b');
      fs.writeFileSync(path.join(target, 'staged.txt'), 's\n');
      git(target, 'add', 'staged.txt');
      fs.writeFileSync(path.join(target, 'a.txt'), 'changed\n');
      const status = git(target, 'status', '--porcelain');
      const head = git(person, 'rev-parse', 'agent/x');
      const common = path.join(person, '.git');
      expect(await linkedEntry(target, common)).toBe(path.join(common, 'worktrees', 'wt'));
      const spec = {
        base: { ref: 'main', sha: git(person, 'rev-parse', 'main') },
        branch: 'agent/x',
        head,
        personCommonDir: common,
        personTop: person,
        snapshotIndex: path.join(base, 'idx'),
        target,
      };
      expect(await convertLinkedWorktree(spec)).toBe(true);
      expect(fs.statSync(path.join(target, '.git')).isDirectory()).toBe(true);
      expect(git(target, 'status', '--porcelain')).toBe(status);
      expect(git(target, 'rev-parse', 'HEAD')).toBe(head);
      expect(git(person, 'worktree', 'list', '--porcelain')).not.toContain(target);
      expect(fs.existsSync(path.join(common, 'worktrees', 'wt'))).toBe(false);
      // Done once: a second call finds nothing to convert.
      expect(await convertLinkedWorktree(spec)).toBe(false);
    } finally {
      fs.rmSync(base, { force: true, recursive: true });
    }
  });
});
