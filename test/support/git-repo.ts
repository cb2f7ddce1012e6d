import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';

import { ok } from './api';
import type { ManagerProcess } from './manager-process';
import { ROOT } from './manager-process';
import { until } from './wait';

/** The synthetic agent of the worktree suites (report:<file>, sh:<base64>). */
export const WORKTREE_AGENT = path.join(ROOT, 'test', 'fixtures', 'agents', 'worktree-agent.js');

/** git in `cwd`, as a person would run it, except that it never refreshes the index as a side effect. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** A repository on `main` with one commit of `files`, and an identity for commits made in it. */
export function initRepository(
  dir: string,
  files: Record<string, string | Buffer> = { 'README.md': '# repo\n' },
): void {
  fs.mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', 'person@example.com');
  git(dir, 'config', 'user.name', 'Person');
  git(dir, 'config', 'commit.gpgsign', 'false');
  writeFiles(dir, files);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'initial');
}

export function writeFiles(dir: string, files: Record<string, string | Buffer>): void {
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), content);
  }
}

/** A shell command for the worktree agent, travelling as base64 (no quoting in any prompt). */
export const sh = (command: string) => `sh:${Buffer.from(command).toString('base64')}`;
/** The synthetic worktree agent's answer for this message, instead of "Done.". */
export const say = (text: string) => `say:${Buffer.from(text).toString('base64')}`;

/**
 * Everything a person's checkout is made of, byte for byte: branch, HEAD, the index file,
 * `git status`, and the bytes of every file that is not tracked-and-clean.
 */
export function checkoutSnapshot(dir: string): Record<string, string> {
  const snapshot: Record<string, string> = {
    branch: git(dir, 'symbolic-ref', '-q', 'HEAD').trim(),
    head: git(dir, 'rev-parse', 'HEAD').trim(),
    index: fs.readFileSync(path.join(dir, '.git', 'index')).toString('base64'),
    status: git(dir, 'status', '--porcelain=v1', '-z', '--untracked-files=all', '--ignored'),
    worktrees: git(dir, 'worktree', 'list', '--porcelain').split('\n\n')[0] ?? '',
  };
  for (const entry of snapshot.status.split('\0').filter((e) => e !== '')) {
    const file = entry.slice(3);
    const absolute = path.join(dir, file);
    if (fs.existsSync(absolute) && fs.statSync(absolute).isFile()) {
      snapshot[`file:${file}`] = fs.readFileSync(absolute).toString('base64');
    }
  }
  return snapshot;
}

type Requirement = Schemas['RequirementResponseDto'];
/** A manager as these helpers use it: a child process (ManagerProcess), or one in the test's process with its client. */
type WithApi = Pick<ManagerProcess, 'api'>;
type Run = Schemas['AgentRunResponseDto'];

// `ok` fails with the answer when a request the caller relies on is not accepted (usable outside
// jest: the benchmarks).
export function createRequirement(
  manager: WithApi,
  body: Partial<Schemas['CreateRequirementDto']> & { title: string },
): Promise<Requirement> {
  return ok(manager.api.POST('/api/requirements', { body: { provider: 'codex', ...body } }), 201);
}

export async function runsOf(manager: WithApi, requirementId: string): Promise<Run[]> {
  return (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId } } }))).items;
}

/**
 * Waits until the Requirement has `count` RD runs, none running, and (in a worktree) until the
 * refresh after the last one reached it. Resolves with the last run and the Requirement.
 */
export async function settled(
  manager: WithApi,
  requirementId: string,
  count: number,
): Promise<{ run: Run; requirement: Requirement }> {
  const done = await until(
    `${count} finished run(s) of ${requirementId}`,
    async () => {
      const runs = (await runsOf(manager, requirementId)).filter((r) => r.role === 'rd');
      if (runs.length < count || runs.some((r) => r.status === 'running')) {
        return undefined;
      }
      const requirement = await ok(
        manager.api.GET('/api/requirements/{id}', { params: { path: { id: requirementId } } }),
      );
      const run = runs[0];
      const worktree = requirement.worktree;
      const refreshed =
        run.status !== 'succeeded' ||
        worktree === null ||
        worktree.mode === 'in_place' ||
        worktree.removedAt !== null ||
        (worktree.refreshedAt ?? '') >= run.finishedAt!;
      return refreshed ? { requirement, run } : undefined;
    },
    60_000,
    100,
  );
  if (done.requirement.worktree?.mode !== 'worktree') {
    return done;
  }
  // The refresh's import starts a radar pass, whose answer may change the Requirement again: a
  // read of the radar waits for the pass in flight, so nothing lands after this returns.
  await ok(manager.api.GET('/api/conflicts'));
  return {
    requirement: await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: requirementId } } })),
    run: done.run,
  };
}

export async function startRun(manager: WithApi, requirementId: string, message: string): Promise<void> {
  await ok(
    manager.api.POST('/api/requirements/{id}/start', { body: { message }, params: { path: { id: requirementId } } }),
    202,
  );
}

export async function reply(manager: WithApi, requirementId: string, message: string): Promise<void> {
  await ok(
    manager.api.POST('/api/requirements/{id}/reply', { body: { message }, params: { path: { id: requirementId } } }),
    202,
  );
}

export interface AgentReport {
  cwd: string;
  env: Record<string, string>;
  /** Date.now() when the agent process started. */
  startedAt: number;
}

export const readReport = (file: string): AgentReport => JSON.parse(fs.readFileSync(file, 'utf8')) as AgentReport;

/** The agent's report once it is there and whole (a poll may find it half written), else undefined. */
export function wholeReport(file: string): AgentReport | undefined {
  try {
    return readReport(file);
  } catch {
    return undefined;
  }
}

/**
 * Team mode's shared remote: a bare repository `<base>/origin.git` with one commit ("initial",
 * README.md on main), as the board's clones meet on it. Returns its path.
 */
export function makeBareOrigin(base: string): string {
  const seed = path.join(base, 'seed');
  const origin = path.join(base, 'origin.git');
  fs.mkdirSync(seed);
  git(seed, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(seed, 'README.md'), '# shared\n');
  git(seed, 'add', '-A');
  git(seed, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'initial');
  git(base, 'clone', '-q', '--bare', seed, origin);
  return origin;
}
