import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

import { apiClient, ok } from '../../test/support/api';
import { launchBrowser } from '../../test/support/browser';
import {
  createRequirement,
  initRepository,
  reply,
  settled,
  sh,
  startRun,
  wholeReport,
} from '../../test/support/git-repo';
import { startWorktreeManager } from '../../test/support/in-process';
import { makeSandbox } from '../../test/support/manager-process';
import { until } from '../../test/support/wait';
import { CheckpointsService } from '../../server/src/worktrees/checkpoints.service';
import { LocalTokenService } from '../../server/src/auth/local-token.service';
import { ScenarioResult, percentile, progress, round } from '../harness';
import { generateRepository } from './worktree';

const CHANGED = 100;
const CHECKPOINTS = 12;
const STARTS = 5;
const REWINDS = 5;
const PAINTS = 5;
/** The first-paint repository: 3,000 tracked files, 2,000 of them changed by the agent, 200 comments. */
const TRACKED = 3_000;
const COMMENTS = 200;

const gitAsync = async (cwd: string, ...args: string[]) =>
  (await promisify(execFile)('git', args, { cwd, maxBuffer: 64 * 1024 * 1024 })).stdout;

/** 100 files of the 20,000 changed in the working copy, over all 100 folders (uncommitted). */
function change(copy: string, salt: number): void {
  for (let f = 0; f < CHANGED; f++) {
    fs.writeFileSync(
      path.join(copy, `d${String(f % 100).padStart(2, '0')}`, `f${f * 7 + salt}.bin`),
      randomBytes(10 * 1024),
    );
  }
}

// The page's global, typed just enough (the bench compiles without the DOM library).
declare const performance: { now(): number };

/**
 * Issue 46's `review` figures. On the 20,000-file repository (200 MB) with 100 files changed in
 * the agent's working copy: what a checkpoint costs (the import of the working state and its ref,
 * as a run's start takes it), what a run's start takes with it, and a rewind (the state saved
 * first, then branch, index and files restored). In Chromium: the review view's first paint of a
 * Requirement with 2,000 changed files and 200 review comments (the file tree listed and the
 * first file's diff drawn).
 */
export async function reviewScenario(): Promise<ScenarioResult> {
  const checkpoints: number[] = [];
  const floors: number[] = [];
  const starts: number[] = [];
  const rewinds: number[] = [];
  const paints: number[] = [];

  const big = makeSandbox();
  try {
    progress('review: generating 20,000 files of 10 KiB');
    generateRepository(big.workspace);
    // Where the agent writes its report (every run has a /tmp of its own): the sandbox's shared folder.
    const writable = process.env.CODE_FACTORY_AGENT_WRITABLE_PATHS;
    process.env.CODE_FACTORY_AGENT_WRITABLE_PATHS = big.shared;
    const manager = await startWorktreeManager(big).finally(() => {
      if (writable === undefined) {
        delete process.env.CODE_FACTORY_AGENT_WRITABLE_PATHS;
      } else {
        process.env.CODE_FACTORY_AGENT_WRITABLE_PATHS = writable;
      }
    });
    try {
      const api = apiClient(manager.url);
      const withApi = { api };
      const { id } = await createRequirement(withApi, { title: 'Checkpointed' });
      await startRun(withApi, id, sh('true'));
      const { requirement, run } = await settled(withApi, id, 1);
      const copy = requirement.worktree!.path!;
      const service = manager.app.get(CheckpointsService);
      for (let i = 0; i < CHECKPOINTS; i++) {
        progress(`review: checkpoint ${i + 1}/${CHECKPOINTS}`);
        change(copy, i % 7);
        const t0 = performance.now();
        await service.atRunStart(id, run.id, null);
        checkpoints.push(performance.now() - t0);
      }
      // The floor: git alone taking the same state (a private index, every file added, its tree
      // written), what any snapshot of these files costs on this machine.
      const floorIndex = path.join(big.shared, 'floor-index');
      const env = { ...process.env, GIT_INDEX_FILE: floorIndex };
      await promisify(execFile)('git', ['read-tree', 'HEAD'], { cwd: copy, env });
      await promisify(execFile)('git', ['add', '-A'], { cwd: copy, env });
      for (let i = 0; i < CHECKPOINTS; i++) {
        change(copy, i % 7);
        const t0 = performance.now();
        await promisify(execFile)('git', ['add', '-A'], { cwd: copy, env });
        await promisify(execFile)('git', ['write-tree'], { cwd: copy, env });
        floors.push(performance.now() - t0);
      }
      const taken = (await ok(api.GET('/api/requirements/{id}/checkpoints', { params: { path: { id } } }))).items;
      if (taken.length < CHECKPOINTS + 2) {
        throw new Error(`expected ${CHECKPOINTS + 2} checkpoints, found ${taken.length}`);
      }
      for (let i = 0; i < STARTS; i++) {
        progress(`review: a run's start with ${CHANGED} changed files ${i + 1}/${STARTS}`);
        change(copy, i % 7);
        const report = path.join(big.shared, `start-${i}.json`);
        const t0 = Date.now();
        await reply(withApi, id, `report:${report}`);
        const place = await until('the agent to start', async () => wholeReport(report), 120_000, 5);
        starts.push(place.startedAt - t0);
        await settled(withApi, id, i + 2);
      }
      for (let i = 0; i < REWINDS; i++) {
        progress(`review: rewind ${i + 1}/${REWINDS}`);
        change(copy, i % 7);
        fs.writeFileSync(path.join(copy, `untracked-${i}.txt`), 'new\n');
        const target = (
          await ok(api.GET('/api/requirements/{id}/checkpoints', { params: { path: { id } } }))
        ).items.find((c) => c.kind === 'run_start' && c.runId === run.id)!;
        const t0 = performance.now();
        await ok(
          api.POST('/api/requirements/{id}/rewind', { body: { checkpointId: target.id }, params: { path: { id } } }),
        );
        rewinds.push(performance.now() - t0);
        if ((await gitAsync(copy, 'status', '--porcelain')).trim() !== '') {
          throw new Error('the rewind left the working copy changed');
        }
      }
    } finally {
      await manager.stop();
    }
  } finally {
    big.cleanup();
  }

  const many = makeSandbox();
  try {
    progress(`review: ${TRACKED} files, the agent changes 2,000`);
    const files: Record<string, string> = {};
    const f = (i: number) => `src/m${String(i % 30).padStart(2, '0')}/f${i}.ts`;
    for (let i = 0; i < TRACKED; i++) {
      files[f(i)] = `export const v${i} = ${i};\n`.repeat(20);
    }
    initRepository(many.workspace, files);
    const manager = await startWorktreeManager(many);
    const browser = await launchBrowser();
    try {
      const api = apiClient(manager.url);
      const withApi = { api };
      const { id } = await createRequirement(withApi, { title: 'Many changes' });
      const script = [
        `for i in $(seq 0 1799); do echo changed >> src/m$(printf %02d $((i % 30)))/f$i.ts; done`,
        'git commit -q -am "1800 files"',
        'mkdir -p new && for i in $(seq 1 200); do echo "new $i" > new/n$i.ts; done',
      ].join(' && ');
      await startRun(withApi, id, sh(script));
      await settled(withApi, id, 1);
      progress(`review: ${COMMENTS} comments`);
      for (let i = 0; i < COMMENTS; i++) {
        await ok(
          api.POST('/api/requirements/{id}/review-comments', {
            body: { body: `Comment ${i}: why this line?`, line: 21, path: f(i * 9), side: 'new' },
            params: { path: { id } },
          }),
        );
      }
      const page = browser.page;
      const token = manager.app.get(LocalTokenService).value;
      await page.goto(`${manager.url}/?token=${token}`);
      await page.waitForURL(`${manager.url}/requirements`);
      for (let i = 0; i < PAINTS; i++) {
        progress(`review: first paint ${i + 1}/${PAINTS}`);
        await page.goto(`${manager.url}/requirements/${id}/review`);
        await page.locator('[data-testid="review-file"]').nth(1_999).waitFor({ state: 'attached', timeout: 60_000 });
        await page.locator('[data-testid="review-line"]').first().waitFor({ timeout: 60_000 });
        // From the navigation's start (the page's own clock) to both on screen.
        paints.push(await page.evaluate(() => performance.now()));
      }
    } finally {
      await browser.close();
      await manager.stop();
    }
  } finally {
    many.cleanup();
  }

  for (const list of [checkpoints, floors, starts, rewinds, paints]) {
    list.sort((a, b) => a - b);
  }
  return {
    figures: [
      {
        name: `a checkpoint on the 20,000-file repository with ${CHANGED} changed files: p50 of ${CHECKPOINTS}`,
        unit: 'ms',
        value: round(percentile(checkpoints, 50), 0),
      },
      {
        name: `a checkpoint, ${CHANGED} changed files: p95 of ${CHECKPOINTS}`,
        target: { op: '<=', value: 150 },
        unit: 'ms',
        value: round(percentile(checkpoints, 95), 0),
      },
      {
        name: `git alone taking the same state (add -A and write-tree, a private index): p50 of ${CHECKPOINTS}`,
        unit: 'ms',
        value: round(percentile(floors, 50), 0),
      },
      {
        name: 'a checkpoint / git alone (p50)',
        unit: '',
        value: round(percentile(checkpoints, 50) / percentile(floors, 50)),
      },
      {
        name: `a run's start with ${CHANGED} changed files, its start checkpoint included: p50 of ${STARTS}`,
        unit: 'ms',
        value: round(percentile(starts, 50), 0),
      },
      {
        name: `a rewind (state saved first; branch, index and files restored): p95 of ${REWINDS}`,
        target: { op: '<=', value: 1000 },
        unit: 'ms',
        value: round(percentile(rewinds, 95), 0),
      },
      {
        name: `the review view's first paint, 2,000 changed files and ${COMMENTS} comments: p50 of ${PAINTS}`,
        unit: 'ms',
        value: round(percentile(paints, 50), 0),
      },
      {
        name: `the review view's first paint: p95 of ${PAINTS}`,
        target: { op: '<=', value: 1500 },
        unit: 'ms',
        value: round(percentile(paints, 95), 0),
      },
    ],
    notes: [
      `checkpoints: ${checkpoints.map((v) => Math.round(v)).join(', ')} ms; starts: ${starts.map((v) => Math.round(v)).join(', ')} ms`,
      `rewinds: ${rewinds.map((v) => Math.round(v)).join(', ')} ms; first paints: ${paints.map((v) => Math.round(v)).join(', ')} ms`,
      `machine load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores at the end`,
    ],
    scenario: 'review',
  };
}
