import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { WORKTREE_AGENT, createRequirement, initRepository, settled, sh, startRun } from '../../test/support/git-repo';
import { send } from '../../test/support/http';
import { ManagerProcess, makeSandbox, startManager } from '../../test/support/manager-process';
import { ScenarioResult, percentile, progress, round } from '../harness';

const TRACKED = 3_000;
const SAMPLES = 60;

async function timed(
  manager: ManagerProcess,
  url: string,
  check: (json: { files: unknown[] }) => void,
): Promise<{ p50: number; p95: number }> {
  const times: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now();
    const res = await send(manager.origin, 'GET', url);
    times.push(performance.now() - t0);
    if (res.status !== 200) {
      throw new Error(`${url} answered ${res.status}: ${res.text.slice(0, 200)}`);
    }
    check(res.json);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p95: percentile(times, 95) };
}

/**
 * Issue 14's `changes` figures: GET /requirements/:id/changes for a Requirement whose agent
 * changed 2,000 files (800 modified and committed, 600 modified and not committed, 400 deleted,
 * 200 untracked), and for one that changed one file; plus one file's diff.
 */
export async function changesScenario(): Promise<ScenarioResult> {
  const sandbox = makeSandbox();
  const files: Record<string, string> = {};
  for (let i = 0; i < TRACKED; i++) {
    files[`src/m${String(i % 30).padStart(2, '0')}/f${i}.ts`] = `export const v${i} = ${i};\n`.repeat(20);
  }
  initRepository(sandbox.workspace, files);
  const manager = await startManager({
    args: ['--log-level', 'warn'],
    env: { CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT },
    sandbox,
  });
  try {
    const many = await createRequirement(manager, { title: 'Many changes' });
    const one = await createRequirement(manager, { title: 'One change' });
    const f = (i: number) => `src/m${String(i % 30).padStart(2, '0')}/f${i}.ts`;
    const script = [
      `for i in $(seq 0 799); do echo changed >> src/m$(printf %02d $((i % 30)))/f$i.ts; done`,
      'git commit -q -am "800 files"',
      `for i in $(seq 800 1399); do echo pending >> src/m$(printf %02d $((i % 30)))/f$i.ts; done`,
      `for i in $(seq 1400 1799); do rm src/m$(printf %02d $((i % 30)))/f$i.ts; done`,
      'mkdir -p new && for i in $(seq 1 200); do echo "new $i" > new/n$i.ts; done',
    ].join(' && ');
    progress('changes: the agents make their changes');
    await Promise.all([startRun(manager, many.id, sh(script)), startRun(manager, one.id, sh(`echo one >> ${f(7)}`))]);
    await settled(manager, many.id, 1);
    await settled(manager, one.id, 1);
    progress(`changes: ${SAMPLES} reads of each`);
    const many2000 = await timed(manager, `/api/requirements/${many.id}/changes`, (json) => {
      if (json.files.length !== 2_000) {
        throw new Error(`expected 2000 changed files, got ${json.files.length}`);
      }
    });
    const single = await timed(manager, `/api/requirements/${one.id}/changes`, (json) => {
      if (json.files.length !== 1) {
        throw new Error(`expected 1 changed file, got ${json.files.length}`);
      }
    });
    const diff = await timed(
      manager,
      `/api/requirements/${many.id}/changes/diff?path=${encodeURIComponent(f(3))}`,
      () => undefined,
    );
    return {
      figures: [
        { name: 'GET changes, 2,000 changed files: p50', unit: 'ms', value: round(many2000.p50, 1) },
        {
          name: 'GET changes, 2,000 changed files: p95',
          target: { op: '<=', value: 300 },
          unit: 'ms',
          value: round(many2000.p95, 1),
        },
        { name: 'GET changes, 1 changed file: p50', unit: 'ms', value: round(single.p50, 1) },
        {
          name: 'GET changes, 1 changed file: p95',
          target: { op: '<=', value: 30 },
          unit: 'ms',
          value: round(single.p95, 1),
        },
        { name: 'GET changes/diff, one file: p95', unit: 'ms', value: round(diff.p95, 1) },
      ],
      notes: [
        `${TRACKED} tracked files; ${SAMPLES} sequential reads each; machine load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores at the end`,
      ],
      scenario: 'changes',
    };
  } finally {
    await manager.stop();
    fs.rmSync(path.dirname(sandbox.home), { force: true, recursive: true });
  }
}
