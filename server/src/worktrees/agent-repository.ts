import { constants as fsConstants } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { GitError, git } from '../core/git/git';

/**
 * The git of an agent's own repository (issue 44): the working copy of a `worktree` Requirement is
 * a repository of its agent's own — its refs, packed-refs, reflogs, index, config and an empty
 * hooks directory — that borrows the workspace's objects read-only through
 * `objects/info/alternates`. Inside it the agent may do everything git allows. Nothing of it is
 * trusted: the manager only imports the Requirement's branch from it (a fetch that checks every
 * object it receives), snapshots its files into the person's repository through a private index,
 * and refuses whatever special file (a FIFO, a device, a symlink) it finds where git would read.
 */

/** `git init`, the refs, the checkout of a large tree. */
export const CREATE_MS = 10 * 60 * 1000;
/** One import: a fetch of what a run committed. */
export const IMPORT_MS = 60_000;
/** One snapshot: a `git add -A` of the whole working copy through the manager's index. */
export const SNAPSHOT_MS = 5 * 60_000;
const QUICK_MS = 30_000;
/** Entries looked at under `refs/` and `objects/` before an import gives up on a repository. */
const INSPECT_MAX_ENTRIES = 500_000;

/** What an import refuses, and why, in one sentence the person can act on. */
export class AgentRepositoryRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentRepositoryRefused';
  }
}

/** Settings for every git that reads an agent's repository or what came from it. */
const IMPORT_SETTINGS: ReadonlyArray<readonly [string, string]> = [
  ['transfer.fsckObjects', 'true'],
  ['fetch.fsckObjects', 'true'],
  ['protocol.file.allow', 'always'],
  ['fetch.writeCommitGraph', 'false'],
  // Which branches were forced is nothing the manager reports; finding out costs a walk per ref.
  ['fetch.showForcedUpdates', 'false'],
  ['advice.fetchShowForcedUpdates', 'false'],
];

function settingsEnvironment(settings: ReadonlyArray<readonly [string, string]>): Record<string, string> {
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(settings.length) };
  settings.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/** A value for a git configuration file: quoted, with what git would read as an escape escaped. */
export function configValue(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\t/g, '\\t')}"`;
}

/** A `[section "subsection"]` header (a subsection may hold any byte but newline and NUL). */
export function configSection(section: string, subsection: string | null): string {
  return subsection === null
    ? `[${section}]`
    : `[${section} "${subsection.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"]`;
}

/**
 * The settings of the person's repository an agent's repository starts with: its remotes (so the
 * agent can fetch and push as it always could) and its own identity and line-ending settings.
 * Nothing that names a program: those stay the person's.
 */
async function inheritedSettings(personTop: string): Promise<string> {
  const out = await git(
    [
      'config',
      '--local',
      '--null',
      '--get-regexp',
      '^(remote\\..*\\.(url|pushurl|fetch)|user\\.(name|email)|core\\.(autocrlf|eol|safecrlf))$',
    ],
    {
      cwd: personTop,
      maxBytes: 1024 * 1024,
      okCodes: [0, 1],
      timeoutMs: QUICK_MS,
    },
  );
  const sections = new Map<string, string[]>();
  for (const entry of out.stdout.split('\0')) {
    const newline = entry.indexOf('\n');
    if (newline <= 0 || entry.includes('\r')) {
      continue;
    }
    const key = entry.slice(0, newline);
    const value = entry.slice(newline + 1);
    const first = key.indexOf('.');
    const last = key.lastIndexOf('.');
    const section = key.slice(0, first);
    const subsection = first === last ? null : key.slice(first + 1, last);
    const header = configSection(section, subsection);
    const lines = sections.get(header) ?? [];
    lines.push(`\t${key.slice(last + 1)} = ${configValue(value)}`);
    sections.set(header, lines);
  }
  return [...sections].map(([header, lines]) => `${header}\n${lines.join('\n')}\n`).join('');
}

export interface NewAgentRepository {
  /** The person's repository: its top, and the git directory whose objects are borrowed. */
  personTop: string;
  personCommonDir: string;
  /** The working copy to make (its `.git` is the agent's repository). */
  target: string;
  /** The branch the agent works on and the commit it starts at; null: detached at `start` (a reviewer). */
  branch: string | null;
  start: string;
  /** The base branch the agent rebases onto, kept current by the manager before every run. */
  base: { ref: string; sha: string } | null;
  /** git-lfs settings for the checkout. */
  env: Record<string, string>;
  /** The manager's own index for snapshots of this working copy, primed from the checkout's. */
  snapshotIndex: string | null;
}

/** What `objects/info/alternates` of every agent repository of this workspace holds. */
export function alternatesFor(personCommonDir: string): string {
  return `${path.join(personCommonDir, 'objects')}\n`;
}

/**
 * An agent's own repository without its files: `git init` without templates (no hooks, an empty
 * hooks directory), the workspace's objects borrowed through `alternates`, the person's remotes
 * and identity, the branch (and the base branch beside it) and HEAD.
 */
export async function initAgentRepository(spec: Omit<NewAgentRepository, 'env' | 'snapshotIndex'>): Promise<void> {
  const gitDir = path.join(spec.target, '.git');
  await fs.mkdir(spec.target, { recursive: true });
  // The person's settings are read while git makes the repository: two gits at once, not in turn.
  const [, settings] = await Promise.all([
    git(['init', '-q', '--template=', spec.target], { cwd: path.dirname(spec.target), timeoutMs: QUICK_MS }),
    inheritedSettings(spec.personTop),
  ]);
  // A repository made a moment ago, that nothing else knows yet: its refs are written as files (the
  // names are the person's branches' own, valid refnames), without one git each.
  const refs: Array<[string, string]> = [
    ...(spec.branch === null ? [] : [[spec.branch, spec.start] as [string, string]]),
    ...(spec.base !== null && spec.base.ref !== spec.branch
      ? [[spec.base.ref, spec.base.sha] as [string, string]]
      : []),
  ];
  await Promise.all([
    fs.mkdir(path.join(gitDir, 'hooks'), { recursive: true }),
    fs
      .mkdir(path.join(gitDir, 'objects', 'info'), { recursive: true })
      .then(() =>
        fs.writeFile(path.join(gitDir, 'objects', 'info', 'alternates'), alternatesFor(spec.personCommonDir)),
      ),
    settings === '' ? undefined : fs.appendFile(path.join(gitDir, 'config'), settings),
    ...refs.map(async ([name, sha]) => {
      const file = path.join(gitDir, 'refs', 'heads', ...name.split('/'));
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(file, `${sha}\n`);
    }),
  ]);
  await fs.writeFile(
    path.join(gitDir, 'HEAD'),
    spec.branch === null ? `${spec.start}\n` : `ref: refs/heads/${spec.branch}\n`,
  );
}

/**
 * Makes an agent's own repository and checks out every file. As fast as `git worktree add`: the
 * files are the cost, and nothing is copied but them.
 */
export async function createAgentRepository(spec: NewAgentRepository): Promise<void> {
  await initAgentRepository(spec);
  await git(['read-tree', '-u', '--reset', 'HEAD'], { cwd: spec.target, env: spec.env, timeoutMs: CREATE_MS });
  if (spec.snapshotIndex !== null) {
    // The checkout's index knows every file's stat data: the first snapshot hashes only what changed.
    await fs.mkdir(path.dirname(spec.snapshotIndex), { mode: 0o700, recursive: true });
    await fs.copyFile(path.join(spec.target, '.git', 'index'), spec.snapshotIndex);
  }
}

/**
 * A prepared working copy (issue 48 §6) becomes a Requirement's: its HEAD, detached at the base
 * commit while it waited, is the Requirement's new branch there. Its setup command ran in it, so
 * it is inspected first and its git is pinned to it, as for a rewind.
 */
export async function adoptPooledRepository(
  top: string,
  personCommonDir: string,
  target: { branch: string; start: string },
): Promise<void> {
  await inspectAgentRepository(top, personCommonDir);
  const own = { cwd: top, env: { GIT_DIR: path.join(top, '.git'), GIT_WORK_TREE: top }, timeoutMs: QUICK_MS };
  const ref = `refs/heads/${target.branch}`;
  await git(['update-ref', '-m', "agent-manager: the Requirement's branch", ref, target.start, ''], own);
  await git(['symbolic-ref', 'HEAD', ref], own);
}

/**
 * Before a run: the agent's copy of the base branch at the person's base commit, so that "rebase
 * onto the base" means the base as it is now. Left alone while the agent has it checked out.
 */
export async function refreshBase(
  top: string,
  personCommonDir: string,
  base: { ref: string; sha: string },
): Promise<void> {
  await inspectAgentRepository(top, personCommonDir);
  if ((await readSmall(path.join(top, '.git', 'HEAD'), 1024)) === `ref: refs/heads/${base.ref}\n`) {
    return;
  }
  await git(['update-ref', '-m', 'agent-manager: the base as it is now', `refs/heads/${base.ref}`, base.sha], {
    cwd: top,
    timeoutMs: QUICK_MS,
  });
}

/**
 * After a land: the agent's branch follows what landed, so that its next import does not undo
 * the land. `absorb` (the snapshot a land with commitPending landed) first becomes the branch's
 * commit with the files as they are (`reset --mixed`), then the branch moves to `to` with
 * `reset --keep`, which refuses rather than lose anything. Only from `head`, the commit the land
 * took: a commit the agent made since stays where it is (returns false).
 */
export async function followInAgentRepository(
  top: string,
  personCommonDir: string,
  move: { head: string; absorb: string | null; to: string | null },
): Promise<boolean> {
  await inspectAgentRepository(top, personCommonDir);
  const options = { cwd: top, timeoutMs: CREATE_MS };
  const now = await git(['rev-parse', '--verify', '-q', 'HEAD^{commit}'], { ...options, okCodes: [0, 1] });
  if (now.stdout.trim() !== move.head) {
    return false;
  }
  if (move.absorb !== null) {
    await git(['reset', '-q', '--mixed', move.absorb], options);
  }
  if (move.to !== null) {
    await git(['reset', '-q', '--keep', move.to], options);
  }
  return true;
}

/**
 * A rewind (issue 46 §6): the agent's branch back at `head` and its files as `commit` had them
 * (the checkpoint: `head` with the uncommitted and untracked files on top). Nothing of the agent's
 * repository is trusted to say where its files are: its own git runs pinned to it (GIT_DIR and
 * GIT_WORK_TREE, so a `core.worktree` in its config is never followed), and the files are written
 * through the manager's own index of the working copy with the person's repository (whose objects
 * the agent cannot forge) — as a snapshot reads them. That index holds the files as the snapshot
 * just before saw them, so what it has and the commit lacks (untracked files made since) is
 * removed; ignored files are in neither and stay. The branch moves first: a rewind cut short
 * leaves a real commit on it and the files as they were, never the snapshot commit as history.
 * The uncommitted files come back unstaged (the agent's index is the head's).
 */
export async function rewindAgentRepository(
  spec: Pick<SnapshotSpec, 'index' | 'personCommonDir' | 'personTop' | 'top'>,
  target: { branch: string; commit: string; head: string },
): Promise<void> {
  await inspectAgentRepository(spec.top, spec.personCommonDir);
  const own = {
    cwd: spec.top,
    env: { GIT_DIR: path.join(spec.top, '.git'), GIT_WORK_TREE: spec.top },
    timeoutMs: QUICK_MS,
  };
  const ref = `refs/heads/${target.branch}`;
  await git(['update-ref', '-m', 'agent-manager: rewind', ref, target.head], own);
  await git(['symbolic-ref', 'HEAD', ref], own);
  await git(['read-tree', target.head], own);
  await git(['read-tree', '-u', '--reset', target.commit], snapshotOptions(spec));
}

/** What a special file is, in words. */
function special(entry: {
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
}): 'a symlink' | 'a FIFO' | 'a socket' | 'a device or special file' {
  return entry.isSymbolicLink()
    ? 'a symlink'
    : entry.isFIFO()
      ? 'a FIFO'
      : entry.isSocket()
        ? 'a socket'
        : 'a device or special file';
}

/** Regular files git reads at the top of a repository; anything else there is refused. */
const TOP_FILES = [
  'HEAD',
  'config',
  'index',
  'packed-refs',
  'shallow',
  'objects/info/alternates',
  'objects/info/http-alternates',
  'objects/info/packs',
  'info/grafts',
];
/** What would make git read another repository's files as this one's. */
const FORBIDDEN = ['commondir', 'gitdir'];

async function kindOf(
  file: string,
): Promise<'missing' | 'file' | 'directory' | 'a symlink' | 'a FIFO' | 'a socket' | 'a device or special file'> {
  try {
    const stat = await fs.lstat(file);
    return stat.isFile() ? 'file' : stat.isDirectory() ? 'directory' : special(stat);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') {
      return 'missing';
    }
    throw err;
  }
}

/** The first `max` bytes of a regular file, opened without following a link and without blocking. */
async function readSmall(file: string, max: number): Promise<string> {
  const handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  try {
    const buffer = Buffer.alloc(max);
    const { bytesRead } = await handle.read(buffer, 0, max, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

/**
 * Whether git may read the agent's repository at `top`: its `.git` a real directory, no
 * `commondir` or `gitdir` sending git elsewhere, the files git reads regular files, the borrowed
 * objects those of this workspace, and nothing under `refs/` and `objects/` but folders and
 * regular files (a FIFO would hang every git that reads it; a symlink would read another
 * repository's). Throws AgentRepositoryRefused saying what it found.
 */
export async function inspectAgentRepository(top: string, personCommonDir: string): Promise<void> {
  const gitDir = path.join(top, '.git');
  const refuse = (what: string) =>
    new AgentRepositoryRefused(`the agent's repository has ${what}; its work is not imported until that is gone`);
  const dotGit = await kindOf(gitDir);
  if (dotGit !== 'directory') {
    throw new AgentRepositoryRefused(
      `${gitDir} is not the agent's repository (${dotGit === 'file' ? 'a file' : dotGit === 'missing' ? 'missing' : dotGit})`,
    );
  }
  for (const name of FORBIDDEN) {
    if ((await kindOf(path.join(gitDir, name))) !== 'missing') {
      throw refuse(`a .git/${name}, which would make git read another repository`);
    }
  }
  for (const name of TOP_FILES) {
    const kind = await kindOf(path.join(gitDir, name));
    if (kind !== 'missing' && kind !== 'file') {
      throw refuse(kind === 'directory' ? `a folder at .git/${name}` : `${kind} at .git/${name}`);
    }
  }
  const alternates = path.join(gitDir, 'objects', 'info', 'alternates');
  if ((await kindOf(alternates)) === 'file' && (await readSmall(alternates, 8192)) !== alternatesFor(personCommonDir)) {
    throw refuse('objects/info/alternates changed to borrow objects from elsewhere');
  }
  let budget = INSPECT_MAX_ENTRIES;
  const walk = async (dir: string, shown: string): Promise<void> => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        return;
      }
      throw refuse(`${shown} that cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    for (const entry of entries) {
      if (--budget < 0) {
        throw refuse(`more than ${INSPECT_MAX_ENTRIES} entries under refs/ and objects/`);
      }
      if (entry.isDirectory()) {
        await walk(path.join(dir, entry.name), `${shown}/${entry.name}`);
      } else if (!entry.isFile()) {
        throw refuse(`${special(entry)} at .git/${shown}/${entry.name}`);
      }
    }
  };
  for (const name of ['refs', 'objects']) {
    const kind = await kindOf(path.join(gitDir, name));
    if (kind !== 'missing' && kind !== 'directory') {
      throw refuse(`${kind === 'file' ? 'a file' : kind} at .git/${name}, not a folder`);
    }
    await walk(path.join(gitDir, name), name);
  }
}

/**
 * The Requirement's branch from the agent's repository into the person's, and its commit: one
 * refspec, forced (the agent may rebase), into that branch only; every object received is checked
 * (`transfer.fsckObjects`; a loose object whose content does not match its name fails the pack),
 * replace refs and grafts are ignored on both sides, and it ends within IMPORT_MS. Returns null
 * when the agent's repository has no such branch (deleted there).
 */
export async function importBranch(
  personTop: string,
  personCommonDir: string,
  top: string,
  branch: string,
): Promise<string | null> {
  await inspectAgentRepository(top, personCommonDir);
  const ref = `refs/heads/${branch}`;
  try {
    await git(
      [
        'fetch',
        '--quiet',
        '--no-tags',
        '--no-write-fetch-head',
        '--no-recurse-submodules',
        '--no-auto-gc',
        '--no-prune',
        path.join(top, '.git'),
        `+${ref}:${ref}`,
      ],
      {
        cwd: personTop,
        env: settingsEnvironment(IMPORT_SETTINGS),
        timeoutMs: IMPORT_MS,
      },
    );
  } catch (err) {
    if (err instanceof GitError && /couldn't find remote ref/i.test(err.stderr)) {
      return null;
    }
    if (err instanceof GitError) {
      const said = err.timedOut
        ? `took longer than ${IMPORT_MS / 1000} s`
        : err.stderr.trim().split('\n').slice(-2).join(' ').slice(0, 300) || err.message;
      throw new AgentRepositoryRefused(`git refused the agent's branch ${branch}: ${said}`);
    }
    throw err;
  }
  const out = await git(['rev-parse', '--verify', '-q', `${ref}^{commit}`], {
    cwd: personTop,
    okCodes: [0, 1],
    timeoutMs: QUICK_MS,
  });
  return out.code === 0 ? out.stdout.trim() : null;
}

export interface Snapshot {
  /** The commit of everything the working copy holds (`head` itself when nothing is uncommitted). */
  work: string;
  dirty: boolean;
}

function snapshotOptions(spec: Pick<SnapshotSpec, 'index' | 'personCommonDir' | 'personTop' | 'top'>) {
  return {
    cwd: spec.personTop,
    env: {
      GIT_DIR: spec.personCommonDir,
      GIT_INDEX_FILE: spec.index,
      GIT_OPTIONAL_LOCKS: '1',
      GIT_WORK_TREE: spec.top,
    },
    timeoutMs: SNAPSHOT_MS,
  };
}

async function addEverything(
  spec: Pick<SnapshotSpec, 'links'>,
  options: ReturnType<typeof snapshotOptions>,
): Promise<void> {
  // The untracked cache (in the manager's own index) skips folders whose stat data, ctime
  // included, is as the last add saw it: a large tree's untracked scan then reads only what changed.
  // ctime is what an agent cannot set back: it is checked whatever the person's configuration says.
  await git(
    [
      '-c',
      'core.untrackedCache=true',
      '-c',
      'core.trustctime=true',
      '-c',
      'core.checkStat=default',
      'add',
      '-A',
      '--',
      ':/',
      ...spec.links.map((link) => `:(exclude,top,literal)${link}`),
    ],
    options,
  );
}

/**
 * The files into the manager's index as they are now, before the head they will be snapshotted on
 * is known: what a snapshot costs (hashing what changed) done while the import's fetch runs. The
 * snapshot's own `add` then finds every entry current.
 */
export async function prepareSnapshot(
  spec: Pick<SnapshotSpec, 'index' | 'links' | 'personCommonDir' | 'personTop' | 'top'>,
): Promise<void> {
  await fs.mkdir(path.dirname(spec.index), { mode: 0o700, recursive: true });
  await addEverything(spec, snapshotOptions(spec));
}

/** Who snapshot commits are by, and when: fixed, so that the same files on the same head give the same commit. */
const SNAPSHOT_AUTHOR = {
  GIT_AUTHOR_EMAIL: 'agent-manager@localhost',
  GIT_AUTHOR_NAME: 'Agent Manager',
  GIT_COMMITTER_EMAIL: 'agent-manager@localhost',
  GIT_COMMITTER_NAME: 'Agent Manager',
};

/** The message of a snapshot commit: what a land with `commitPending` lands. */
export function snapshotMessage(title: string, requirementId: string): string {
  return `Uncommitted work of "${title}"\n\nCommitted by Agent Manager before landing (Requirement ${requirementId}).`;
}

export interface SnapshotSpec {
  personTop: string;
  personCommonDir: string;
  /** The agent's working copy. */
  top: string;
  /** The imported head the snapshot builds on. */
  head: string;
  /** Whether the index last held `head` (then only the files are looked at again). */
  indexOnHead: boolean;
  /** The manager's private index for this working copy (in the data directory). */
  index: string;
  /** Paths the manager linked in (node_modules → the checkout's): not the agent's work. */
  links: readonly string[];
  message: string;
}

/**
 * Everything the agent's working copy holds now — tracked changes and untracked files, not
 * ignored ones — as a commit on `head` in the person's repository, read through the manager's own
 * index (the agent's index, HEAD and configuration are never read: git runs on the person's git
 * directory with the working copy as its work tree). Only changed files are hashed: the index
 * keeps their stat data between snapshots. Same files, same head: same commit.
 */
export async function snapshotWork(spec: SnapshotSpec): Promise<Snapshot> {
  const options = snapshotOptions(spec);
  await fs.mkdir(path.dirname(spec.index), { mode: 0o700, recursive: true });
  if (!spec.indexOnHead) {
    // A one-tree merge keeps the stat data of every entry whose content is unchanged (`-i`: the
    // index alone, whatever the files are now: `add` looks at those next).
    await git(['read-tree', '-m', '-i', spec.head], options);
  }
  await addEverything(spec, options);
  const [tree, facts] = await Promise.all([
    git(['write-tree'], options),
    git(['log', '-1', '--no-show-signature', '--format=%T %ct', spec.head], {
      ...options,
      env: { GIT_DIR: spec.personCommonDir },
    }),
  ]);
  const [headTree, committed] = facts.stdout.trim().split(' ');
  const written = tree.stdout.trim();
  if (written === headTree) {
    return { dirty: false, work: spec.head };
  }
  const date = `@${committed} +0000`;
  const commit = await git(['commit-tree', written, '-p', spec.head, '-m', spec.message], {
    cwd: spec.personTop,
    env: { ...SNAPSHOT_AUTHOR, GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date, GIT_DIR: spec.personCommonDir },
    timeoutMs: QUICK_MS,
  });
  return { dirty: true, work: commit.stdout.trim() };
}
