import { runBounded } from './bounded-process';

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
 * when the manager itself was started from a git hook, for instance).
 */
const REPOSITORY_VARIABLES = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_COMMON_DIR', 'GIT_PREFIX'];

export function gitEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of REPOSITORY_VARIABLES) {
    delete env[name];
  }
  // Never wait for a password on a terminal nobody watches; reads never take the index lock
  // (`git status` would otherwise refresh it under an agent's running `git commit`).
  return { ...env, GIT_OPTIONAL_LOCKS: '0', GIT_TERMINAL_PROMPT: '0', ...extra };
}

/**
 * The one way the server runs git (architecture §10): `execFile`-style (no shell, arguments as
 * given), with a time limit and bounded output.
 */
export async function git(args: readonly string[], options: GitOptions): Promise<GitResult> {
  const result = await runBounded('git', args, {
    cwd: options.cwd,
    env: gitEnvironment(options.env),
    maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  });
  const what = `git ${args.slice(0, 3).join(' ')}`;
  if (result.error !== null) {
    throw new GitError(`${what} could not be run: ${result.error}`, null, '', false);
  }
  if (result.timedOut) {
    throw new GitError(`${what} took longer than ${(options.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000} s`, null, result.stderr, true);
  }
  if (result.truncated && !options.allowTruncated) {
    throw new GitError(`${what} printed more than ${options.maxBytes ?? DEFAULT_MAX_BYTES} bytes`, null, result.stderr, false);
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
