import * as fs from 'node:fs';
import * as path from 'node:path';

import { scrubbedEnvironment } from '../scrubbed-environment';
import { runBounded } from '../process/bounded-process';

/** A git command that failed (non-zero exit, time limit, or git missing). */
export class GitError extends Error {
  constructor(
    message: string,
    readonly code: number | null,
    readonly stderr: string,
    readonly timedOut: boolean,
  ) {
    super(message);
    this.name = 'GitError';
  }
}

export interface GitOptions {
  cwd: string;
  timeoutMs?: number;
  maxBytes?: number;
  /** Exit codes that are answers, not failures (`git diff --no-index` exits 1 on a difference). */
  okCodes?: number[];
  /** Extra environment (GIT_INDEX_FILE, GIT_LFS_SKIP_SMUDGE…). */
  env?: Record<string, string>;
  /** Keep a cut output instead of failing (diffs: the caller says `truncated`). */
  allowTruncated?: boolean;
}

export interface GitResult {
  stdout: string;
  code: number;
  truncated: boolean;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Variables that would point git at another repository or index than the one asked for (set
 * when the manager itself was started from a git hook, for instance), or run a program of their
 * choosing for a diff.
 */
export const REPOSITORY_VARIABLES = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_OBJECT_DIRECTORY',
  'GIT_COMMON_DIR',
  'GIT_PREFIX',
  'GIT_EXTERNAL_DIFF',
];

/**
 * The environment of every git process: the agents' scrubbed one (none of the manager's own
 * settings or secrets), never a terminal to wait on, no pager or editor, reads that never take
 * the index lock (`git status` would otherwise refresh it under an agent's `git commit`), and no
 * replace refs or grafts: an object is what its name says, whatever a repository redirects it to
 * (issue 44: an agent's `git replace` showed one content in review and landed another).
 */
export function gitEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = scrubbedEnvironment();
  for (const name of REPOSITORY_VARIABLES) {
    delete env[name];
  }
  return {
    ...env,
    GIT_EDITOR: ':',
    GIT_GRAFT_FILE: '/dev/null',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_OPTIONAL_LOCKS: '0',
    GIT_PAGER: 'cat',
    GIT_SEQUENCE_EDITOR: ':',
    GIT_TERMINAL_PROMPT: '0',
    PAGER: 'cat',
    ...extra,
  };
}

/**
 * Settings that make git run a program, given with command-line precedence (which outranks
 * every configuration file) so that nothing an agent wrote into a repository's configuration runs
 * in the manager, where the owner token and the database are in reach: hooks (`core.hooksPath`
 * to a directory that cannot hold any), the file-system monitor, pagers, editors, credential and
 * SSH helpers, signing programs and the `ext::` transport. Per-name programs (filters, diff and
 * merge drivers, upload-pack) are found by `repositoryOverrides`.
 */
export const NEUTRAL_SETTINGS: ReadonlyArray<readonly [string, string]> = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.pager', 'cat'],
  ['core.editor', ':'],
  ['sequence.editor', ':'],
  ['core.askPass', ''],
  ['core.sshCommand', 'ssh'],
  ['core.gitProxy', ''],
  ['core.alternateRefsCommand', ''],
  ['credential.helper', ''],
  ['diff.external', ''],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['protocol.ext.allow', 'never'],
  // GIT_GRAFT_FILE is /dev/null (gitEnvironment): no hint about grafts on every command.
  ['advice.graftFileDeprecated', 'false'],
];

/** Subcommands that print diffs: an external diff or a textconv driver would run for them. */
const DIFF_COMMANDS = new Set(['diff', 'diff-files', 'diff-index', 'diff-tree', 'format-patch', 'log', 'show']);

/**
 * What a key of the repository's own configuration (scope local or worktree, which an agent
 * could have written) names that git would run, and the value that makes it run nothing.
 * Filters become no-ops (and optional), a merge driver one that always conflicts, upload-pack
 * and receive-pack git's own, credential helpers none.
 */
export function neutralValue(key: string, value: string): string | null {
  const parts = key.toLowerCase().split('.');
  const [section, last] = [parts[0], parts[parts.length - 1]];
  if (parts.length < 3 && !(section === 'credential' && last === 'helper')) {
    return null;
  }
  switch (`${section}.${last}`) {
    case 'filter.clean':
    case 'filter.smudge':
    case 'filter.process':
    case 'diff.textconv':
    case 'diff.command':
    case 'credential.helper':
    case 'gpg.program':
    case 'difftool.cmd':
    case 'mergetool.cmd':
      return '';
    case 'filter.required':
      return 'false';
    case 'merge.driver':
      return 'false';
    case 'remote.uploadpack':
      return 'git-upload-pack';
    case 'remote.receivepack':
      return 'git-receive-pack';
    case 'submodule.update':
      return value.trim().startsWith('!') ? 'checkout' : null;
    default:
      return null;
  }
}

interface ConfigOverrides {
  /** Key and value for each program the repository's configuration names. */
  settings: Array<[string, string]>;
  /** The files that configuration came from, or may come from, with what they were when read. */
  files: Array<{ file: string; stamp: string }>;
  /** No file changed while it was read: `settings` may be answered from here while the stamps hold. */
  trusted: boolean;
}

const overridesByDirectory = new Map<string, ConfigOverrides>();
/** A read in flight, and the stamps it started from. */
const overridesReading = new Map<
  string,
  { settings: Promise<Array<[string, string]>>; before: Map<string, string> | null }
>();
const OVERRIDES_KEPT = 256;

/**
 * What a file is now, cheaply: a replaced file or folder, a rewritten file, a symlink pointed
 * elsewhere or at a changed file all give another stamp. A folder is its identity only (its
 * times move with every lock file git writes in it).
 */
function stamp(file: string): string {
  const part = (st: fs.Stats) =>
    st.isDirectory() ? `d${st.dev}:${st.ino}` : `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  try {
    const own = fs.lstatSync(file);
    if (!own.isSymbolicLink()) {
      return part(own);
    }
    try {
      return `${part(own)}>${part(fs.statSync(file))}`;
    } catch {
      return `${part(own)}>missing`;
    }
  } catch {
    return 'missing';
  }
}

/**
 * The `.git` that git would find from `cwd` (in it or in any folder above): one appearing,
 * going, or a worktree's `.git` file pointed at another repository changes which configuration
 * applies, so these are part of every answer's stamps (an answer of "not a repository" too).
 */
function discoveryFiles(cwd: string): string[] {
  const files: string[] = [];
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    files.push(path.join(dir, '.git'));
    if (path.dirname(dir) === dir) {
      return files;
    }
  }
}

/**
 * The settings that neutralise every program the configuration of the repository at `cwd`
 * names (local and worktree scope: what an agent could have written). Read with git itself
 * (includes resolved) and kept until one of the files it came from, the repository's own
 * `config`, `config.worktree`, `commondir` and `HEAD` (`includeIf "onbranch:…"`), or a `.git` git
 * would discover, changes. Every run's
 * start asks for several directories at once, so callers for one directory share one read.
 */
function repositoryOverrides(cwd: string): Promise<Array<[string, string]>> {
  const known = overridesByDirectory.get(cwd);
  if (known?.trusted && known.files.every(({ file, stamp: was }) => stamp(file) === was)) {
    return Promise.resolve(known.settings);
  }
  // A read in flight answers for this caller too only if nothing it depends on changed since it
  // started (else the caller's command could run on what was there before an agent's write).
  // A first read does not know the repository's files yet: its callers each read.
  const reading = overridesReading.get(cwd);
  if (reading?.before && [...reading.before].every(([file, was]) => stamp(file) === was)) {
    return reading.settings;
  }
  // Stamped before the read as well as after: an answer is kept as trusted only when nothing it
  // depends on changed while git read it (else an agent writing its config during the read
  // could leave the old, clean answer cached under the new file's stamp). The files a read
  // discovers (includes, the repository's own) are stamped before the next read.
  const candidates = new Set([...discoveryFiles(cwd), ...(known?.files.map((f) => f.file) ?? [])]);
  const before = new Map([...candidates].map((file) => [file, stamp(file)]));
  const settings = readOverrides(cwd, before).finally(() => {
    if (overridesReading.get(cwd)?.settings === settings) {
      overridesReading.delete(cwd);
    }
  });
  overridesReading.set(cwd, { before: known ? before : null, settings });
  return settings;
}

async function readOverrides(cwd: string, before: ReadonlyMap<string, string>): Promise<Array<[string, string]>> {
  const run = (args: string[]) =>
    runBounded('git', ['-c', 'core.fsmonitor=false', ...args], {
      cwd,
      env: gitEnvironment(),
      maxBytes: 4 * 1024 * 1024,
      timeoutMs: 30_000,
    });
  const [listed, dirs] = await Promise.all([
    run(['config', '--list', '--show-scope', '--show-origin', '--null']),
    run(['rev-parse', '--path-format=absolute', '--git-dir', '--git-common-dir']),
  ]);
  const keep = (settings: Array<[string, string]>, files: Iterable<string>): Array<[string, string]> => {
    const stamped = [...new Set(files)].map((file) => ({ file, stamp: stamp(file) }));
    if (overridesByDirectory.size >= OVERRIDES_KEPT) {
      overridesByDirectory.clear();
    }
    overridesByDirectory.set(cwd, {
      files: stamped,
      settings,
      trusted: stamped.every(({ file, stamp: now }) => before.get(file) === now),
    });
    return settings;
  };
  if (dirs.error !== null) {
    // git could not be started here (no such folder): nothing to answer for later.
    return [];
  }
  if (dirs.code !== 0) {
    // Not a repository (yet): nothing of its own to neutralise, until a `.git` appears.
    return keep([], discoveryFiles(cwd));
  }
  if (listed.code !== 0 || listed.truncated) {
    // A repository whose configuration cannot be listed is not run blind: git would read it too.
    const said = (listed.error ?? listed.stderr).trim().split('\n').slice(-2).join(' ').slice(0, 300);
    throw new GitError(
      `the repository's configuration could not be read${said ? `: ${said}` : ''}`,
      listed.code,
      listed.stderr,
      listed.timedOut,
    );
  }
  const settings: Array<[string, string]> = [];
  const files = new Set<string>(discoveryFiles(cwd));
  const entries = listed.stdout.toString('utf8').split('\0');
  for (let i = 0; i + 2 < entries.length; i += 3) {
    const [scope, origin, pair] = [entries[i], entries[i + 1], entries[i + 2]];
    if (scope !== 'local' && scope !== 'worktree') {
      continue;
    }
    const from = origin.startsWith('file:') ? path.resolve(cwd, origin.slice('file:'.length)) : null;
    if (from !== null) {
      files.add(from);
    }
    const newline = pair.indexOf('\n');
    const key = newline === -1 ? pair : pair.slice(0, newline);
    const value = newline === -1 ? '' : pair.slice(newline + 1);
    // An include git skipped (its file missing, its condition false) is watched too: the file
    // appearing later changes the configuration without touching any file read so far.
    if (from !== null && value !== '' && (key === 'include.path' || /^includeif\..*\.path$/.test(key))) {
      files.add(
        value.startsWith('~/')
          ? path.join(process.env.HOME ?? '/', value.slice(2))
          : path.resolve(path.dirname(from), value),
      );
    }
    const neutral = neutralValue(key, value);
    if (neutral !== null) {
      settings.push([key, neutral]);
    }
  }
  const [gitDir, commonDir] = dirs.stdout.toString('utf8').trim().split('\n');
  for (const file of [
    path.join(commonDir, 'config'),
    path.join(commonDir, 'config.worktree'),
    path.join(gitDir, 'config.worktree'),
    path.join(gitDir, 'commondir'),
    path.join(gitDir, 'HEAD'),
  ]) {
    files.add(file);
  }
  return keep(settings, files);
}

/**
 * A git command as it is run: the neutral settings and the repository's own programs
 * neutralised, given as `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` (command-line
 * precedence like `-c`, but no parsing of `key=value`, so a subsection holding `=` cannot dodge
 * it, and inherited by the git processes git starts itself, submodules included); for the
 * commands that print diffs, no external diff and no textconv.
 */
export async function guardedInvocation(
  args: readonly string[],
  cwd: string,
  base: NodeJS.ProcessEnv = process.env,
): Promise<{ args: string[]; env: Record<string, string> }> {
  const own = await repositoryOverrides(cwd);
  const env: Record<string, string> = {};
  const settings = [...NEUTRAL_SETTINGS, ...own];
  // The person's own GIT_CONFIG_COUNT settings stay (numbered first); ours come after, so they win.
  const first = /^\d{1,4}$/.test(base.GIT_CONFIG_COUNT ?? '') ? Number(base.GIT_CONFIG_COUNT) : 0;
  settings.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${first + i}`] = key;
    env[`GIT_CONFIG_VALUE_${first + i}`] = value;
  });
  env.GIT_CONFIG_COUNT = String(first + settings.length);
  const [command, ...rest] = args;
  const diffGuards =
    command !== undefined && DIFF_COMMANDS.has(command)
      ? ['--no-ext-diff', '--no-textconv'].filter((flag) => !rest.includes(flag))
      : [];
  return { args: command === undefined ? [] : [command, ...diffGuards, ...rest], env };
}

/**
 * Settings for one git command, for `GitOptions.env`: what `-c key=value` would say, given in the
 * environment (`GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n`, numbered after the person's own) instead, so
 * that a secret value — a push's Authorization header — never shows in any process's command
 * line (`/proc/<pid>/cmdline` is readable by everyone; a process's environment only by its user).
 * `guardedInvocation` numbers the neutral settings after these, so none of them can undo a guard.
 */
export function configEnvironment(
  settings: ReadonlyArray<readonly [string, string]>,
  inherited: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const first = /^\d{1,4}$/.test(inherited.GIT_CONFIG_COUNT ?? '') ? Number(inherited.GIT_CONFIG_COUNT) : 0;
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(first + settings.length) };
  settings.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${first + i}`] = key;
    env[`GIT_CONFIG_VALUE_${first + i}`] = value;
  });
  return env;
}

/**
 * The one way the server runs git (docs/architecture.md#layers): `execFile`-style (no shell, arguments as
 * given), with a time limit and bounded output, and with every program a repository's
 * configuration could make git run neutralised (`guardedArguments`) in the agents' scrubbed
 * environment (docs/security.md, "Git in the manager"). A spec keeps every other file from
 * starting git.
 */
export async function git(args: readonly string[], options: GitOptions): Promise<GitResult> {
  const base = gitEnvironment(options.env);
  const guarded = await guardedInvocation(args, options.cwd, base);
  const result = await runBounded('git', guarded.args, {
    cwd: options.cwd,
    // The caller's variables first: nothing it passes can undo the guards.
    env: { ...base, ...guarded.env },
    maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  });
  const what = `git ${args.slice(0, 3).join(' ')}`;
  if (result.error !== null) {
    throw new GitError(`${what} could not be run: ${result.error}`, null, '', false);
  }
  if (result.timedOut) {
    throw new GitError(
      `${what} took longer than ${(options.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000} s`,
      null,
      result.stderr,
      true,
    );
  }
  if (result.truncated && !options.allowTruncated) {
    throw new GitError(
      `${what} printed more than ${options.maxBytes ?? DEFAULT_MAX_BYTES} bytes`,
      null,
      result.stderr,
      false,
    );
  }
  const code = result.code ?? -1;
  if (!result.truncated && !(options.okCodes ?? [0]).includes(code)) {
    const said = result.stderr.trim().split('\n').slice(-3).join(' ').slice(0, 500);
    throw new GitError(`${what} failed (exit ${code})${said ? `: ${said}` : ''}`, code, result.stderr, false);
  }
  return { code, stdout: result.stdout.toString('utf8'), truncated: result.truncated };
}

/** True when the command exits 0, false on any other exit (`rev-parse --verify`, `show-ref`). */
export async function gitSucceeds(args: readonly string[], options: GitOptions): Promise<boolean> {
  try {
    await git(args, options);
    return true;
  } catch (err) {
    if (err instanceof GitError && err.code !== null) {
      return false;
    }
    throw err;
  }
}

/**
 * What the workspace is to git, for the warnings of the banner, the log and a create's answer:
 * `repository` (with a commit: Requirements get worktrees), `no_commit` (`git init` only: agents
 * work in place, in the person's checkout, until a first commit) or `not_git`. git missing or
 * failing counts as `not_git`, as `WorkspaceGit.gitWorkspace` treats it.
 */
export async function workspaceGitState(
  cwd: string,
  timeoutMs = 30_000,
): Promise<'repository' | 'no_commit' | 'not_git'> {
  try {
    // One git (a Requirement's creation asks this): the top, then HEAD's commit, which prints
    // nothing and exits 1 before the first commit; outside a work tree git exits 128.
    const out = await git(['rev-parse', '--show-toplevel', '--verify', '-q', 'HEAD^{commit}'], {
      cwd,
      okCodes: [0, 1, 128],
      timeoutMs,
    });
    const lines = out.stdout.trim().split('\n');
    if (out.code === 0 && lines.length === 2 && lines[0] !== '' && lines[1] !== '') {
      return 'repository';
    }
    return out.code === 1 && lines.length === 1 && lines[0] !== '' ? 'no_commit' : 'not_git';
  } catch {
    return 'not_git';
  }
}
