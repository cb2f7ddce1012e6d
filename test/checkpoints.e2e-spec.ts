import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';
import type { RunningManager } from '@server/manager';
import { RetentionService } from '@server/retention/retention.service';

import { apiClient, ok } from './support/api';
import { execute } from './support/db-snapshot';
import { createRequirement, git, initRepository, reply, runsOf, settled, sh, startRun } from './support/git-repo';
import { startWorktreeManager } from './support/in-process';
import { Sandbox, makeSandbox } from './support/manager-process';
import { expectRefused } from './support/refusals';
import { until } from './support/wait';

type Checkpoint = Schemas['CheckpointDto'];

// Issue 46 §5–6: a checkpoint of the agent's whole working state (branch head, staged, unstaged
// and untracked files, not ignored ones) at each RD run's start and end, what one run changed
// between two of them, and a rewind to one (itself undoable), refused while a run is active. A
// real in-process server, a real repository and SQLite file, the synthetic worktree agent as a
// real child process.

jest.setTimeout(120_000);

describe('checkpoints and rewind', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  let dataDirectory: string;
  const api = () => apiClient(manager.url);
  const withApi = () => ({ api: api() });
  const checkpoints = async (id: string): Promise<Checkpoint[]> =>
    (await ok(api().GET('/api/requirements/{id}/checkpoints', { params: { path: { id } } }))).items;
  const rewind = (id: string, checkpointId: string, note?: string) =>
    api().POST('/api/requirements/{id}/rewind', { body: { checkpointId, note }, params: { path: { id } } });

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { '.gitignore': '*.log\n', 'README.md': '# repo\n' });
    manager = await startWorktreeManager(sandbox);
    dataDirectory = manager.runtime.paths.dataDirectory;
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('checkpoints each run’s start and end, shows what one run changed, and rewinds to one and back, never while a run is active', async () => {
    const { id } = await createRequirement(withApi(), { title: 'Checkpointed' });
    // Run 1: a commit, an uncommitted change and an untracked file.
    await startRun(
      withApi(),
      id,
      sh('echo one > a.txt && git add a.txt && git commit -qm a && echo more >> README.md && echo s > scratch.txt'),
    );
    const { requirement: first, run: run1 } = await settled(withApi(), id, 1);
    const worktree = first.worktree!.path!;
    const base = first.worktree!.baseSha!;
    // The end's checkpoint is taken as the run's end is handled, which may come after its refresh.
    const endOf = (runId: string) =>
      until(`the end checkpoint of ${runId}`, async () => {
        const all = await checkpoints(id);
        return all.some((c) => c.kind === 'run_end' && c.runId === runId) ? all : undefined;
      });
    const afterFirst = await endOf(run1.id);
    expect(afterFirst.map((c) => [c.kind, c.runId])).toEqual([
      ['run_start', run1.id],
      ['run_end', run1.id],
    ]);
    expect(afterFirst[0]).toMatchObject({ commit: base, filesChanged: 0, head: base, requirementId: id });
    expect(afterFirst[1]).toMatchObject({
      commit: first.worktree!.workSha,
      filesChanged: 3,
      head: first.worktree!.headSha,
    });
    expect(afterFirst[1].commit).not.toBe(afterFirst[1].head);

    // Run 2 commits everything and adds b.txt: only b.txt is what it changed.
    await reply(withApi(), id, sh('echo two > b.txt && git add -A && git commit -qm b'));
    const { requirement: second, run: run2 } = await settled(withApi(), id, 2);
    const all = await endOf(run2.id);
    expect(all.map((c) => [c.kind, c.runId])).toEqual([
      ['run_start', run1.id],
      ['run_end', run1.id],
      ['run_start', run2.id],
      ['run_end', run2.id],
    ]);
    const [, , start2, end2] = all;
    expect(start2.commit).toBe(afterFirst[1].commit);
    expect(end2).toMatchObject({ commit: second.worktree!.headSha, filesChanged: 1 });
    const ofRun2 = await ok(
      api().GET('/api/requirements/{id}/changes', { params: { path: { id }, query: { from: start2.id } } }),
    );
    expect(ofRun2.files.map((f) => [f.path, f.status])).toEqual([['b.txt', 'added']]);
    expect(
      (
        await ok(
          api().GET('/api/requirements/{id}/changes', {
            params: { path: { id }, query: { from: afterFirst[0].id, to: start2.id } },
          }),
        )
      ).files.map((f) => f.path),
    ).toEqual(['README.md', 'a.txt', 'scratch.txt']);
    const diff = await api().GET('/api/requirements/{id}/changes/diff', {
      params: { path: { id }, query: { from: start2.id, path: 'b.txt' } },
      parseAs: 'text',
    });
    expect(diff.data).toContain('+two');

    // Refusals, each writing nothing: another Requirement's checkpoint, an unknown one, `to` alone.
    const other = await createRequirement(withApi(), { title: 'Another' });
    await startRun(withApi(), other.id, sh('true'));
    await settled(withApi(), other.id, 1);
    const [othersCheckpoint] = await checkpoints(other.id);
    await expectRefused(dataDirectory, () => rewind(id, othersCheckpoint.id), 404, 'checkpoint_not_found');
    await expectRefused(dataDirectory, () => rewind(id, 'ckp_00000000-0000-4000-8000-000000000000'), 404);
    await expectRefused(dataDirectory, () => rewind(id, 'not-an-id'), 404, 'checkpoint_not_found');
    await expectRefused(
      dataDirectory,
      () => api().GET('/api/requirements/{id}/changes', { params: { path: { id }, query: { to: start2.id } } }),
      400,
      'range_without_from',
    );

    // Each checkpoint's commit is kept by a private ref of the person's repository.
    const refs = git(
      sandbox.workspace,
      'for-each-ref',
      '--format=%(refname) %(objectname)',
      `refs/agent-manager/checkpoints/${id}/`,
    )
      .trim()
      .split('\n')
      .sort();
    expect(refs).toEqual(all.map((c) => `refs/agent-manager/checkpoints/${id}/${c.id} ${c.commit}`).sort());

    // An ignored file made after the checkpoint stays; the rest goes back to run 2's start. The
    // agent's config naming another work tree is not followed: nothing outside its working copy is touched.
    fs.writeFileSync(path.join(worktree, 'debug.log'), 'mine\n');
    const victim = path.join(sandbox.shared, 'victim');
    fs.mkdirSync(victim);
    fs.writeFileSync(path.join(victim, 'precious.txt'), 'keep me\n');
    git(worktree, 'config', 'core.worktree', victim);
    const rewound = await ok(rewind(id, start2.id, 'Try again without b.txt'));
    git(worktree, 'config', '--unset', 'core.worktree');
    expect(fs.readdirSync(victim)).toEqual(['precious.txt']);
    expect(fs.readFileSync(path.join(victim, 'precious.txt'), 'utf8')).toBe('keep me\n');
    expect(rewound.restored.id).toBe(start2.id);
    expect(rewound.saved).toMatchObject({ commit: end2.commit, kind: 'rewind', runId: null });
    expect(fs.existsSync(path.join(worktree, 'b.txt'))).toBe(false);
    expect(fs.readFileSync(path.join(worktree, 'scratch.txt'), 'utf8')).toBe('s\n');
    expect(fs.readFileSync(path.join(worktree, 'README.md'), 'utf8')).toBe('# repo\nmore\n');
    expect(fs.readFileSync(path.join(worktree, 'debug.log'), 'utf8')).toBe('mine\n');
    expect(git(worktree, 'rev-parse', 'HEAD').trim()).toBe(start2.head);
    expect(git(worktree, 'symbolic-ref', 'HEAD').trim()).toBe(`refs/heads/${first.worktree!.branch}`);
    expect(git(worktree, 'status', '--porcelain').trimEnd().split('\n').sort()).toEqual([
      ' M README.md',
      '?? scratch.txt',
    ]);
    expect(rewound.message).toMatchObject({
      args: {
        checkpoint: start2.id,
        kind: 'run_start',
        note: 'Try again without b.txt',
        run: run2.id,
        saved: rewound.saved.id,
      },
      author: 'system',
      code: 'requirement.rewound',
      deliverToRd: true,
    });
    const imported = await ok(api().GET('/api/requirements/{id}', { params: { path: { id } } }));
    expect(imported.worktree).toMatchObject({ dirty: true, headSha: start2.head });

    // The rewind is itself undone by rewinding to the checkpoint it saved.
    await ok(rewind(id, rewound.saved.id));
    expect(fs.readFileSync(path.join(worktree, 'b.txt'), 'utf8')).toBe('two\n');
    expect(git(worktree, 'rev-parse', 'HEAD').trim()).toBe(end2.head);
    expect(git(worktree, 'status', '--porcelain').trim()).toBe('');

    // The next run is told: the rewind messages are in its input.
    await reply(withApi(), id, sh('sleep 3'));
    const running = await until('the run to be active', async () =>
      (await runsOf(withApi(), id)).find((r) => r.status === 'running'),
    );
    // Its start checkpoint taken, and the radar's look at that import done: nothing else writes meanwhile.
    await until('its start checkpoint', async () => (await checkpoints(id)).find((c) => c.runId === running.id));
    await ok(api().GET('/api/conflicts'));
    await expectRefused(dataDirectory, () => rewind(id, start2.id), 409, 'run_active');
    const { run: run3 } = await settled(withApi(), id, 3);
    expect(
      run3.inputFromSequence! <= rewound.message.sequence && rewound.message.sequence <= run3.inputToSequence!,
    ).toBe(true);

    // A purge takes a Requirement's checkpoints with it: their rows, and their refs (a reaction to the purge).
    const refsOf = (requirementId: string) =>
      git(sandbox.workspace, 'for-each-ref', `refs/agent-manager/checkpoints/${requirementId}/`).trim();
    expect(refsOf(other.id)).not.toBe('');
    await ok(api().POST('/api/requirements/{id}/cancel', { params: { path: { id: other.id } } }));
    await execute(path.join(dataDirectory, 'factory.sqlite'), 'UPDATE requirement SET updated_at = ? WHERE id = ?', [
      '2000-01-01T00:00:00.000Z',
      other.id,
    ]);
    expect(await manager.app.get(RetentionService).purge()).toBe(1);
    await until('its checkpoint refs gone', () => Promise.resolve(refsOf(other.id) === '' || undefined));
    expect((await api().GET('/api/requirements/{id}/checkpoints', { params: { path: { id: other.id } } })).status).toBe(
      404,
    );
    expect(refsOf(id)).not.toBe('');
  });

  it('takes a first start as the base commit only when nothing ran in the new working copy: a setup command’s files are in it', async () => {
    await ok(api().PATCH('/api/configuration', { body: { worktreeSetupCommand: 'echo made > setup-output.txt' } }));
    try {
      const { id } = await createRequirement(withApi(), { title: 'Set up first' });
      await startRun(withApi(), id, sh('true'));
      const { requirement } = await settled(withApi(), id, 1);
      const [start] = await checkpoints(id);
      expect(start).toMatchObject({ filesChanged: 1, head: requirement.worktree!.baseSha, kind: 'run_start' });
      expect(start.commit).not.toBe(start.head);
      expect(git(sandbox.workspace, 'show', `${start.commit}:setup-output.txt`)).toBe('made\n');
    } finally {
      await ok(api().PATCH('/api/configuration', { body: { worktreeSetupCommand: null } }));
    }
  });
});
