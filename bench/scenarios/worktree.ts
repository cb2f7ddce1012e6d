import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

import { WORKTREE_AGENT, createRequirement, git, initRepository, readReport, settled, startRun } from '../../test/support/git-repo';
import { makeSandbox, startManager } from '../../test/support/manager-process';
import { until } from '../../test/support/wait';
import { ScenarioResult, percentile, progress, round } from '../harness';

const FILES = 20_000;
const FILE_BYTES = 10 * 1024;
const ROUNDS = 5;

/**
 * Asynchronous, unlike the tests' `git()`: a checkout blocking this process for seconds would let
 * the manager close the idle keep-alive connection unseen, and the next request fail on it.
 */
const gitAsync = async (cwd: string, ...args: string[]) => (await promisify(execFile)('git', args, { cwd, maxBuffer: 64 * 1024 * 1024 })).stdout;

/** 20,000 files of 10 KiB (200 MB, incompressible), in 100 folders, one commit. */
function generateRepository(dir: string): void {
  initRepository(dir, { 'README.md': '# generated\n' });
  for (let i = 0; i < FILES; i++) {
    const file = path.join(dir, `d${String(i % 100).padStart(2, '0')}`, `f${i}.bin`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, randomBytes(FILE_BYTES));
  }
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'generated');
}

/**
 * Issue 14's `worktree` figure: what a Requirement's first run costs before its agent starts,
 * beside plain `git worktree add` of the same repository. The manager's time runs from POST
 * /start until the agent process (a synthetic one) is running in its new worktree: the start
 * request, the write path, the port block, `git worktree add`, the submodule/include/link
 * checks and the process launch. The two alternate, so the page cache favours neither, and a
 * round starts only once the previous run's refresh (a `git status` of the whole tree) is over.
 */
export async function worktreeScenario(): Promise<ScenarioResult> {
  const sandbox = makeSandbox();
  const plainRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'am-bench-plain-'));
  try {
    progress(`worktree: generating ${FILES} files of ${FILE_BYTES / 1024} KiB`);
    generateRepository(sandbox.workspace);
    const manager = await startManager({ args: ['--log-level', 'warn'], env: { CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT }, sandbox });
    const ours: number[] = [];
    const plain: number[] = [];
    try {
      for (let round = 0; round < ROUNDS; round++) {
        progress(`worktree: round ${round + 1}/${ROUNDS}`);
        const target = path.join(plainRoot, `plain-${round}`);
        const t0 = performance.now();
        await gitAsync(sandbox.workspace, 'worktree', 'add', '-q', '-b', `bench/plain-${round}`, target, 'main');
        plain.push(performance.now() - t0);
        await gitAsync(sandbox.workspace, 'worktree', 'remove', '--force', target);

        const requirement = await createRequirement(manager, { title: `Bench ${round}` });
        const report = path.join(plainRoot, `report-${round}.json`);
        const started = Date.now();
        await startRun(manager, requirement.id, `report:${report}`);
        await until('the agent to start in its worktree', async () => fs.existsSync(report) || undefined, 120_000, 5);
        ours.push(readReport(report).startedAt - started);
        // The refresh after the run reads all 20,000 files: let it end before the next round.
        await settled(manager, requirement.id, 1);
      }
    } catch (err) {
      // Say what the manager said, too: a benchmark that fails must be diagnosable from its output.
      const alive = manager.child.exitCode === null && manager.child.signalCode === null;
      throw new Error(
        `${(err as Error).message} (${(err as Error & { cause?: Error }).cause?.message ?? 'no cause'}); manager ${alive ? 'alive' : `exited ${manager.child.exitCode ?? manager.child.signalCode}`}; stderr: ${manager.stderr().slice(-1500)}`,
      );
    } finally {
      await manager.stop();
    }
    ours.sort((a, b) => a - b);
    plain.sort((a, b) => a - b);
    const p50 = percentile(ours, 50);
    const plainP50 = percentile(plain, 50);
    return {
      figures: [
        { name: `first run until its agent starts in a new worktree (${FILES} files, 200 MB), p50 of ${ROUNDS}`, unit: 'ms', value: round(p50, 0) },
        { name: `plain git worktree add, same repository, p50 of ${ROUNDS}`, unit: 'ms', value: round(plainP50, 0) },
        { name: 'worktree creation / plain git worktree add', target: { op: '<=', value: 1.3 }, unit: '', value: round(p50 / plainP50) },
      ],
      notes: [`ours: ${ours.map((v) => Math.round(v)).join(', ')} ms; plain: ${plain.map((v) => Math.round(v)).join(', ')} ms`],
      scenario: 'worktree',
    };
  } finally {
    sandbox.cleanup();
    fs.rmSync(plainRoot, { force: true, recursive: true });
  }
}
