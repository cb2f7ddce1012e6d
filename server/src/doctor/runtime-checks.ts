import { findExecutable } from '../agents/executable';
import { exec, versionAtLeast } from './doctor-exec';
import { DoctorCheck } from './doctor-report';

// The runtime a manager needs: a Node.js release `engines` allows, and git.

/**
 * package.json's `engines`: the oldest release of each line that runs the manager quietly. 20.19.0
 * and 22.12.0 run it too but print an ExperimentalWarning on every start (CommonJS `require()` of
 * Octokit's ES modules), which later releases of both lines dropped; 21 and 23 are odd lines,
 * never LTS. test/node-versions.e2e-spec.ts starts the manager on each line's minimum.
 */
export const NODE_ENGINES = '^20.19.1 || >=22.13.0';
export const MINIMUM_NODE_VERSION = '20.19.1';
const MINIMUM_NODE_22 = '22.13.0';

/** Whether `version` satisfies NODE_ENGINES. */
export function supportedNode(version: string): boolean {
  const major = Number(version.replace(/^v/, '').split('.')[0]);
  if (major === 20) {
    return versionAtLeast(version, MINIMUM_NODE_VERSION);
  }
  return major >= 22 && versionAtLeast(version, MINIMUM_NODE_22);
}

export function checkNode(version = process.version): DoctorCheck {
  const ok = supportedNode(version);
  return {
    detail: `Node.js ${version}${ok ? '' : `; ${MINIMUM_NODE_VERSION}+ or ${MINIMUM_NODE_22}+ is needed`}`,
    fix: ok
      ? null
      : `install a maintained Node.js LTS, 24 or 26 (or ${MINIMUM_NODE_VERSION}+ / ${MINIMUM_NODE_22}+) from https://nodejs.org`,
    args: { minimum: MINIMUM_NODE_VERSION, minimum22: MINIMUM_NODE_22, version },
    code: ok ? 'node.ok' : 'node.too_old',
    id: 'node',
    required: true,
    status: ok ? 'ok' : 'fail',
    title: 'Node.js',
  };
}

export async function checkGit(root: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<DoctorCheck> {
  const base = { id: 'git' as const, required: true, title: 'git' };
  const git = findExecutable('git', env.PATH ?? '', root);
  if (git === null) {
    return {
      ...base,
      args: {},
      code: 'git.missing',
      detail: 'git is not on the PATH',
      fix: 'install git (for example apt-get install git)',
      status: 'fail',
    };
  }
  const version = await exec(git, ['--version'], env, root, timeoutMs);
  if (version.code !== 0) {
    const error = (version.error ?? version.stderr).trim();
    return {
      ...base,
      args: { error, path: git },
      code: 'git.version_failed',
      detail: `${git} --version failed: ${error}`,
      fix: 'reinstall git',
      status: 'fail',
    };
  }
  const repo = await exec(git, ['rev-parse', '--show-toplevel'], env, root, timeoutMs);
  const detail = version.stdout.trim();
  if (repo.code !== 0) {
    return {
      ...base,
      args: { folder: root, version: detail },
      code: 'git.not_a_repository',
      detail: `${detail}; ${root} is not inside a git repository: agents would work in place, directly in this folder`,
      fix: 'run Agent Manager inside your repository, or make this one: git init && git add -A && git commit -m "Initial commit"',
      required: false,
      status: 'warn',
    };
  }
  // `git init` alone is a repository without worktrees (they need a commit to branch from): agents
  // would work in the person's checkout, which must not pass for "git ✓".
  const head = await exec(git, ['rev-parse', '--verify', '-q', 'HEAD^{commit}'], env, root, timeoutMs);
  if (head.code !== 0) {
    return {
      ...base,
      args: { repository: repo.stdout.trim(), version: detail },
      code: 'git.no_commit',
      detail: `${detail}; repository ${repo.stdout.trim()} has no commit yet: agents would work in place, directly in your checkout, not in worktrees of their own`,
      fix: 'make a first commit: git add -A && git commit -m "Initial commit"',
      required: false,
      status: 'warn',
    };
  }
  return {
    ...base,
    args: { repository: repo.stdout.trim(), version: detail },
    code: 'git.ok',
    detail: `${detail}; repository ${repo.stdout.trim()}`,
    fix: null,
    status: 'ok',
  };
}
