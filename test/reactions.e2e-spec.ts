import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';

import type { Schemas } from '@libs/api-client';

import { ok } from './support/api';
import { query } from './support/db-snapshot';
import {
  WORKTREE_AGENT,
  createRequirement,
  git,
  initRepository,
  reply,
  settled,
  sh,
  startRun,
} from './support/git-repo';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { until } from './support/wait';

// Issue 50: features react to committed events through the event log, each reaction with a
// durable cursor. A real manager on a real repository (the synthetic worktree agent makes real
// commits); GET /api/system/reactions shows where each reaction is; a kill -9 between a run's end
// and the merge queue's reaction to it loses nothing: the next start hands the reaction that run's
// end again, and the queue lands the work.

jest.setTimeout(180_000);

const AGENTS = {
  CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
  CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
  GH_TOKEN: '',
  GITHUB_TOKEN: '',
};
const QUEUE = 'LandingQueueService.runsOrRadarChanged';
const RADAR = 'ConflictRadar.workRead';

type Reaction = Schemas['ReactionResponseDto'];

const reactions = async (manager: ManagerProcess) => ok(manager.api.GET('/api/system/reactions'));
const reaction = async (manager: ManagerProcess, name: string): Promise<Reaction> => {
  const found = (await reactions(manager)).reactions.find((r) => r.reaction === name);
  if (!found) {
    throw new Error(`no reaction ${name}`);
  }
  return found;
};

/** Opens the FIFO for writing and closes it, so that every git blocked reading it reads its end and goes on. */
function release(fifo: string): void {
  for (let i = 0; i < 20; i += 1) {
    try {
      fs.closeSync(fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK));
    } catch {
      return; // ENXIO: no reader left
    }
  }
}

/** Processes running git with their working directory in `dir` (what a killed manager left running). */
function gitsIn(dir: string): number[] {
  const real = fs.realpathSync(dir);
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) {
      continue;
    }
    try {
      const cwd = fs.readlinkSync(`/proc/${entry}/cwd`);
      const command = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')[0];
      if ((cwd === real || cwd.startsWith(`${real}/`)) && path.basename(command) === 'git') {
        pids.push(Number(entry));
      }
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return pids;
}

describe('reactions to committed events', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess;

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n' });
    manager = await startManager({ env: AGENTS, sandbox });
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('lists every reaction with its events, its cursor level with the log once idle, and no error', async () => {
    const requirement = await createRequirement(manager, { title: 'Seen by the reactions' });
    await startRun(manager, requirement.id, sh('echo one > one.txt && git add one.txt && git commit -qm one'));
    await settled(manager, requirement.id, 1);
    const listed = await until('every reaction to be level with the log', async () => {
      const now = await reactions(manager);
      return now.reactions.every((r) => r.lag === 0 && r.inFlight === 0) ? now : undefined;
    });
    expect(listed.reactions.map((r) => r.reaction).sort()).toEqual(
      [
        'AttentionService.causesCommitted',
        'BranchSharing.runsEnded',
        'BudgetsService.treesCharged',
        'CheckpointsService.purged',
        'IssueWriteBack.workChanged',
        RADAR,
        QUEUE,
        'NotificationsService.itemsOpened',
        'PreviewsService.endWithRequirement',
        'TerminalsService.endWithRequirement',
        'ReviewAnchors.followImports',
        'ReviewLoopService.runsEnded',
      ].sort(),
    );
    expect(listed.reactions.find((r) => r.reaction === RADAR)).toMatchObject({
      events: ['requirement.updated'],
      failures: 0,
      lastError: null,
      oldestPendingAt: null,
      retryAt: null,
    });
    expect(listed.reactions.find((r) => r.reaction === QUEUE)!.events).toEqual([
      'run.succeeded',
      'run.failed',
      'run.cancelled',
      'run.timed_out',
      'landing.conflicts.updated',
    ]);
    // The run's end and the refresh's import reached them: each handled at least one batch.
    for (const name of [RADAR, QUEUE]) {
      expect(listed.reactions.find((r) => r.reaction === name)!.handled).toBeGreaterThan(0);
    }
    const run = (
      await query<{ id: number }>(
        path.join(manager.dataDirectory(), 'factory.sqlite'),
        "SELECT MAX(id) AS id FROM manager_event WHERE requirement_id = ? AND type = 'run.succeeded'",
        [requirement.id],
      )
    )[0].id;
    expect(listed.reactions.every((r) => r.position >= run)).toBe(true);
  });

  it("hands a run's end to the merge queue again after a kill -9 that came before the queue had acted on it", async () => {
    const dbPath = () => path.join(manager.dataDirectory(), 'factory.sqlite');
    const work = await createRequirement(manager, { title: 'Lands after a crash' });
    await startRun(manager, work.id, sh('echo two > two.txt && git add two.txt && git commit -qm two'));
    await settled(manager, work.id, 1);
    // A second run holds the session while the work is queued: the queue waits for its end.
    const started = path.join(sandbox.shared, 'second-run-started');
    const finish = path.join(sandbox.shared, 'second-run-may-end');
    await reply(manager, work.id, sh(`touch '${started}' && while [ ! -e '${finish}' ]; do sleep 0.1; done`));
    await until('the second run to be under way', async () => fs.existsSync(started));
    await ok(manager.api.POST('/api/landing-queue', { body: { method: 'merge', requirementId: work.id } }), 201);
    await until('the queue to wait for the run', async () =>
      (await ok(manager.api.GET('/api/landing-queue'))).items[0]?.state === 'queued' ? true : undefined,
    );
    // Every git that reads the person's objects now hangs: the queue's land after the run's end
    // cannot finish, so the kill comes while the queue is still acting on that end.
    const fifo = path.join(sandbox.workspace, '.git', 'objects', 'info', 'alternates');
    fs.mkdirSync(path.dirname(fifo), { recursive: true });
    execFileSync('mkfifo', [fifo]);
    fs.writeFileSync(finish, '');
    let ended: number;
    try {
      ended = await until(
        "the second run's end",
        async () =>
          (
            await query<{ id: number }>(
              dbPath(),
              "SELECT id FROM manager_event WHERE requirement_id = ? AND type = 'run.succeeded' ORDER BY id LIMIT 1 OFFSET 1",
              [work.id],
            )
          )[0]?.id,
        30_000,
      );
      const acting = await until('the queue to be acting on it', async () => {
        const now = await reaction(manager, QUEUE);
        return now.inFlight > 0 && now.position < ended ? now : undefined;
      });
      expect(acting.lag).toBeGreaterThan(0);
      await manager.kill9();
      // Its cursor was written before the run's end: the end is the next start's to hand over.

      const [cursor] = await query<{ event_id: number }>(
        dbPath(),
        'SELECT event_id FROM reaction_cursor WHERE reaction = ?',
        [QUEUE],
      );
      expect(cursor.event_id).toBeLessThan(ended);
    } finally {
      release(fifo);
      fs.rmSync(fifo, { force: true });
    }
    // The killed manager's gits go on once released: they finish before the next manager starts.
    await until('no git of the killed manager left in the repository', async () =>
      gitsIn(sandbox.workspace).length === 0 ? true : undefined,
    );
    manager = await startManager({ env: AGENTS, sandbox });
    // Handed again from its cursor: the batch the start read from the log held that end, and the cursor passed it.
    const again = await until(
      'the queue reaction to be handed the run end again',
      async () => {
        const now = await reaction(manager, QUEUE);
        return now.position >= ended && now.lastError === null && now.lastCaughtUp ? now : undefined;
      },
      60_000,
    );
    expect(again.lastCaughtUp!.from).toBeLessThanOrEqual(ended);
    expect(again.lastCaughtUp!.to).toBeGreaterThanOrEqual(ended);
    const landed = await until(
      'the work to land',
      async () => {
        const now = await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: work.id } } }));
        return now.landing.landedCommit ? now : undefined;
      },
      60_000,
    );
    expect(git(sandbox.workspace, 'show', `${landed.landing.landedCommit}:two.txt`)).toBe('two\n');
    expect((await ok(manager.api.GET('/api/landing-queue'))).items).toEqual([]);
  });
});
