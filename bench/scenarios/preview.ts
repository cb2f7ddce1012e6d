import { spawn } from 'node:child_process';
import * as net from 'node:net';

import { ok } from '../../test/support/api';
import { WORKTREE_AGENT, createRequirement, initRepository, say, settled, startRun } from '../../test/support/git-repo';
import { ManagerProcess, makeSandbox, startManager } from '../../test/support/manager-process';
import { until } from '../../test/support/wait';
import { ScenarioResult, percentile, progress, round } from '../harness';

const ROUNDS = 12;

/** A trivial server on AGENT_MANAGER_PORT: what a dev server's readiness costs at least. */
const RUN_SCRIPT = `#!/bin/sh
exec node -e 'require("http").createServer((q, s) => s.end("ok")).listen(Number(process.env.AGENT_MANAGER_PORT), "127.0.0.1")'
`;

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket.destroy() !== null));
    socket.once('error', () => resolve(false));
  });
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The floor: the same script started by hand in the same working copy, until its port answers. */
async function byHand(cwd: string): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn('/bin/sh', ['.agent-manager/run'], {
    cwd,
    env: { ...process.env, AGENT_MANAGER_PORT: String(port) },
    stdio: 'ignore',
  });
  try {
    await until('the script by hand to listen', async () => (await answers(port)) || undefined, 30_000, 5);
    return performance.now() - started;
  } finally {
    child.kill('SIGKILL');
  }
}

/**
 * Issue 48: a preview's start → ready (POST until GET says ready and the URL answers) for a
 * trivial server, against the floor of the same script started by hand in the same working copy
 * (no manager, no sandbox, no network namespace). Alternating, one after the other.
 */
export async function previewScenario(): Promise<ScenarioResult> {
  const box = makeSandbox();
  let manager: ManagerProcess | null = null;
  const preview: number[] = [];
  const floor: number[] = [];
  try {
    initRepository(box.workspace, { '.agent-manager/run': RUN_SCRIPT, 'README.md': '# preview bench\n' });
    manager = await startManager({
      args: ['--log-level', 'warn'],
      env: { CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT, CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT },
      sandbox: box,
    });
    const api = manager.api;
    const id = (await createRequirement(manager, { title: 'Preview bench' })).id;
    await startRun(manager, id, say('Done.'));
    await settled(manager, id, 1);
    const copy = (await ok(api.GET('/api/requirements/{id}', { params: { path: { id } } }))).worktree!.path!;
    for (let r = 0; r < ROUNDS; r++) {
      progress(`preview: round ${r + 1}/${ROUNDS}`);
      floor.push(await byHand(copy));
      const started = performance.now();
      await ok(api.POST('/api/requirements/{id}/preview', { params: { path: { id } } }));
      const ready = await until(
        'the preview to be ready',
        async () => {
          const now = await ok(api.GET('/api/requirements/{id}/preview', { params: { path: { id } } }));
          if (now.state === 'exited') {
            throw new Error(`the preview exited: ${now.reason}`);
          }
          return now.state === 'ready' ? now : undefined;
        },
        30_000,
        5,
      );
      if (!(await answers(ready.ports!.first))) {
        throw new Error('the preview was ready but its URL did not answer');
      }
      preview.push(performance.now() - started);
      await ok(api.DELETE('/api/requirements/{id}/preview', { params: { path: { id } } }));
    }
  } finally {
    await manager?.stop();
    box.cleanup();
  }
  const p = (list: number[], at: number) =>
    percentile(
      [...list].sort((a, b) => a - b),
      at,
    );
  return {
    figures: [
      { name: `preview start → ready, p50 of ${ROUNDS}`, unit: 'ms', value: round(p(preview, 50), 0) },
      { name: `preview start → ready, p95 of ${ROUNDS}`, unit: 'ms', value: round(p(preview, 95), 0) },
      { name: 'the same script by hand until it listens (floor), p95', unit: 'ms', value: round(p(floor, 95), 0) },
      {
        name: 'preview start → ready over the floor, p95',
        target: { op: '<=', value: 1000 },
        unit: 'ms',
        value: round(p(preview, 95) - p(floor, 95), 0),
      },
    ],
    notes: [
      `preview ${preview.map((v) => Math.round(v)).join(', ')} ms; by hand ${floor.map((v) => Math.round(v)).join(', ')} ms`,
    ],
    scenario: 'preview',
  };
}
