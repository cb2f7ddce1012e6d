import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

import {
  WORKTREE_AGENT,
  createRequirement,
  git,
  initRepository,
  wholeReport,
  settled,
  startRun,
} from '../../test/support/git-repo';
import { makeSandbox, startManager } from '../../test/support/manager-process';
import { until } from '../../test/support/wait';
import { ScenarioResult, percentile, progress, round } from '../harness';

const FILES = 20_000;
const FILE_BYTES = 10 * 1024;
const ROUNDS = 5;
/** Imports measured after the creations: each brings a commit of this many changed files. */
const IMPORTS = 10;
const IMPORT_FILES = 100;

/**
 * Asynchronous, unlike the tests' `git()`: a checkout blocking this process for seconds would let
 * the manager close the idle keep-alive connection unseen, and the next request fail on it.
 */
const gitAsync = async (cwd: string, ...args: string[]) =>
  (await promisify(execFile)('git', args, { cwd, maxBuffer: 64 * 1024 * 1024 })).stdout;

/** 20,000 files of 10 KiB (200 MB, incompressible), in 100 folders, one commit. */
export function generateRepository(dir: string): void {
  initRepository(dir, { 'README.md': '# generated\n' });
  for (let i = 0; i < FILES; i++) {
    const file = path.join(dir, `d${String(i % 100).padStart(2, '0')}`, `f${i}.bin`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, randomBytes(FILE_BYTES));
  }
  git(dir, 'add', '-A');
  // 20,000 loose objects would make this commit start a detached `git gc --auto`, repacking
  // 200 MB in the background during the first rounds, whichever side they measure.
  git(dir, 'config', 'gc.auto', '0');
  git(dir, 'config', 'maintenance.auto', 'false');
  git(dir, 'commit', '-q', '-m', 'generated');
  // Packed, as a person's repository is (20,000 loose objects are what the next `gc --auto` packs):
  // every object lookup of an import would otherwise be a stat() of its own file.
  git(dir, 'gc', '-q');
}

/**
 * Issue 14's `worktree` figure: what a Requirement's first run costs before its agent starts,
 * beside plain `git worktree add` of the same repository. The manager's time runs from POST
 * /start until the agent process (a synthetic one) is running in its new worktree: the start
 * request, the write path, the port block, `git worktree add`, the submodule/include/link
 * checks and the process launch. The two alternate, and which goes first alternates by round, so
 * the page cache and the write-back of the previous tree favour neither; a measurement starts only
 * once the previous run's refresh (a `git status` of the whole tree) is over. The plain worktrees
 * stay until the end, like the manager's: removed at once, their 200 MB could be dropped before
 * being written, and their removal ran just before the manager's turn, while the manager's trees
 * were written back to disk during later measurements.
 */
export async function worktreeScenario(): Promise<ScenarioResult> {
  const sandbox = makeSandbox();
  const plainRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'am-bench-plain-'));
  try {
    progress(`worktree: generating ${FILES} files of ${FILE_BYTES / 1024} KiB`);
    generateRepository(sandbox.workspace);
    const manager = await startManager({
      args: ['--log-level', 'warn'],
      env: { CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT },
      sandbox,
    });
    const ours: number[] = [];
    const plain: number[] = [];
    const imports: number[] = [];
    const importsGathered: number[] = [];
    const workingCopies: string[] = [];
    const requirementIds: string[] = [];
    let ownGitKiB = 0;
    let linkedEntryKiB = 0;
    try {
      const plainAdd = async (round: number) => {
        const t0 = performance.now();
        await gitAsync(
          sandbox.workspace,
          'worktree',
          'add',
          '-q',
          '-b',
          `bench/plain-${round}`,
          path.join(plainRoot, `plain-${round}`),
          'main',
        );
        plain.push(performance.now() - t0);
      };
      const managerAdd = async (round: number) => {
        const requirement = await createRequirement(manager, { title: `Bench ${round}` });
        // Where the agent writes its report: every run has a /tmp of its own.
        const report = path.join(sandbox.shared, `report-${round}.json`);
        const started = Date.now();
        await startRun(manager, requirement.id, `report:${report}`);
        // Whole, not only there: the agent may still be writing it.
        const place = await until('the agent to start in its worktree', async () => wholeReport(report), 120_000, 5);
        ours.push(place.startedAt - started);
        // The refresh after the run reads all 20,000 files: let it end before the next measurement.
        const { requirement: done } = await settled(manager, requirement.id, 1);
        workingCopies.push(done.worktree!.path!);
        requirementIds.push(requirement.id);
      };
      for (let round = 0; round < ROUNDS; round++) {
        progress(`worktree: round ${round + 1}/${ROUNDS}`);
        // Plain first in even rounds, the manager first in odd ones: neither always follows the other.
        if (round % 2 === 0) {
          await plainAdd(round);
          await managerAdd(round);
        } else {
          await managerAdd(round);
          await plainAdd(round);
        }
      }
      // Disk each adds beside the files: an own repository's .git (its index, refs, config; the
      // objects are borrowed), against a linked worktree's entry in the person's repository.
      const du = async (dir: string) => Number((await promisify(execFile)('du', ['-sk', dir])).stdout.split('\t')[0]);
      ownGitKiB = await du(path.join(workingCopies[0], '.git'));
      linkedEntryKiB = await du(path.join(sandbox.workspace, '.git', 'worktrees', 'plain-0'));
      // The import after a run: a commit of 100 changed files in the agent's repository, brought into
      // the person's (a checked fetch, the snapshot of the files, the record), as the refresh does it.
      // Spread over all 100 folders (every folder's tree changes: the most git has to walk), then
      // gathered in 5 (a change as a feature usually makes it).
      const copy = workingCopies[0];
      const importOnce = async (i: number, folders: number, into: number[]) => {
        for (let f = 0; f < IMPORT_FILES; f++) {
          fs.writeFileSync(
            path.join(copy, `d${String(f % folders).padStart(2, '0')}`, `f${f}.bin`),
            randomBytes(FILE_BYTES),
          );
        }
        await gitAsync(copy, 'add', '-A');
        await gitAsync(
          copy,
          '-c',
          'user.name=Agent',
          '-c',
          'user.email=agent@example.com',
          'commit',
          '-q',
          '-m',
          `change ${folders}.${i}`,
        );
        const t0 = performance.now();
        const refreshed = await manager.api.POST('/api/requirements/{id}/worktree/refresh', {
          params: { path: { id: requirementIds[0] } },
        });
        into.push(performance.now() - t0);
        if (refreshed.data?.worktree?.headSha !== (await gitAsync(copy, 'rev-parse', 'HEAD')).trim()) {
          throw new Error(
            `the import did not bring the agent's commit: ${JSON.stringify(refreshed.data?.worktree ?? refreshed.error)}`,
          );
        }
      };
      for (let i = 0; i < IMPORTS; i++) {
        progress(`worktree: import ${i + 1}/${IMPORTS}`);
        await importOnce(i, 100, imports);
        await importOnce(i, 5, importsGathered);
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
    imports.sort((a, b) => a - b);
    importsGathered.sort((a, b) => a - b);
    const p50 = percentile(ours, 50);
    const plainP50 = percentile(plain, 50);
    return {
      figures: [
        {
          name: `first run until its agent starts in a new working copy, a repository of its own (${FILES} files, 200 MB), p50 of ${ROUNDS}`,
          unit: 'ms',
          value: round(p50, 0),
        },
        {
          name: `first run until its agent starts, p95 of ${ROUNDS}`,
          unit: 'ms',
          value: round(percentile(ours, 95), 0),
        },
        { name: `plain git worktree add, same repository, p50 of ${ROUNDS}`, unit: 'ms', value: round(plainP50, 0) },
        {
          name: 'working copy creation / plain git worktree add (p50)',
          target: { op: '<=', value: 1.5 },
          unit: '',
          value: round(p50 / plainP50),
        },
        {
          name: 'working copy creation / plain git worktree add (p95)',
          target: { op: '<=', value: 1.5 },
          unit: '',
          value: round(percentile(ours, 95) / percentile(plain, 95)),
        },
        {
          name: `import of a ${IMPORT_FILES}-file commit in 100 folders after a run (fetch, snapshot, record), p50 of ${IMPORTS}`,
          unit: 'ms',
          value: round(percentile(imports, 50), 0),
        },
        {
          name: `import of a ${IMPORT_FILES}-file commit in 100 folders, p95 of ${IMPORTS}`,
          target: { op: '<=', value: 300 },
          unit: 'ms',
          value: round(percentile(imports, 95), 0),
        },
        {
          name: `import of a ${IMPORT_FILES}-file commit in 5 folders, p50 of ${IMPORTS}`,
          unit: 'ms',
          value: round(percentile(importsGathered, 50), 0),
        },
        {
          name: `import of a ${IMPORT_FILES}-file commit in 5 folders, p95 of ${IMPORTS}`,
          target: { op: '<=', value: 300 },
          unit: 'ms',
          value: round(percentile(importsGathered, 95), 0),
        },
        {
          name: "disk an own repository's .git adds per Requirement (objects borrowed)",
          unit: 'KiB',
          value: ownGitKiB,
        },
        {
          name: "disk a linked worktree's entry added per Requirement (before issue 44)",
          unit: 'KiB',
          value: linkedEntryKiB,
        },
      ],
      notes: [
        `ours: ${ours.map((v) => Math.round(v)).join(', ')} ms; plain: ${plain.map((v) => Math.round(v)).join(', ')} ms`,
        `imports, 100 folders: ${imports.map((v) => Math.round(v)).join(', ')} ms; 5 folders: ${importsGathered.map((v) => Math.round(v)).join(', ')} ms`,
      ],
      scenario: 'worktree',
    };
  } finally {
    sandbox.cleanup();
    fs.rmSync(plainRoot, { force: true, recursive: true });
  }
}
