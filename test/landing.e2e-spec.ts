import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';

import { ok, refusal } from './support/api';
import {
  checkoutSnapshot,
  createRequirement,
  git,
  initRepository,
  reply,
  settled,
  sh,
  startRun,
  WORKTREE_AGENT,
  writeFiles,
} from './support/git-repo';
import { startInProcess } from './support/in-process';
import { Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { snapshotStore } from './support/db-snapshot';
import { sendUntyped } from './support/http';
import { expectRefused } from './support/refusals';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';

// Issue 28: landing a Requirement's branch (merge, squash, rebase), the conflict radar and the
// merge queue. A real manager on a real repository; each run is the synthetic worktree agent,
// whose `sh:` message makes real commits in its worktree (what a real CLI does with a tool call).

jest.setTimeout(180_000);

const AGENTS = {
  CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
  CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
  GH_TOKEN: '',
  GITHUB_TOKEN: '',
};

type Requirement = Schemas['RequirementResponseDto'];
type Method = Schemas['LandRequirementDto']['method'];

/** A file's content as a shell command can write it, whatever it holds. */
const put = (file: string, content: string) =>
  `mkdir -p "$(dirname '${file}')" && printf '%s' '${Buffer.from(content).toString('base64')}' | base64 -d > '${file}'`;

/** Writes `files` (null: deletes) and commits them as `message`, in the agent's worktree. */
function commit(files: Record<string, string | null>, message: string, author?: string): string {
  const steps = Object.entries(files).map(([file, content]) =>
    content === null ? `git rm -q '${file}'` : put(file, content),
  );
  const who = author ? `-c user.name='${author}' -c user.email='${author.toLowerCase()}@agents.test'` : '';
  return [...steps, 'git add -A', `git ${who} commit -q -m '${message}'`].join(' && ');
}

async function land(
  manager: TestManager,
  id: string,
  method: Method,
  extra: Partial<Schemas['LandRequirementDto']> = {},
) {
  return manager.api.POST('/api/requirements/{id}/land', { body: { method, ...extra }, params: { path: { id } } });
}

const get = (manager: TestManager, id: string) =>
  ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));

/** A new Requirement whose first run ran `command` (its commits), once that run ended. */
async function runOnce(manager: TestManager, title: string, command: string): Promise<Requirement> {
  const requirement = await createRequirement(manager, { title });
  await startRun(manager, requirement.id, sh(command));
  const { requirement: after, run } = await settled(manager, requirement.id, 1);
  expect(run.status).toBe('succeeded');
  return after;
}

/** Every ref of the repository and what each names: a refused land changes none. */
const refs = (repo: string) => git(repo, 'for-each-ref', '--format=%(refname) %(objectname)');

describe('landing a Requirement locally', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let repo: string;

  /**
   * Waits for the end checkpoints of a Requirement's first `runs` runs: each is written after its
   * run's refresh, at the manager's pace (a ref in the person's repository and an event), so a
   * refusal that compares the store or the refs starts only once they are there.
   */
  async function endCheckpoints(requirementId: string, runs: number): Promise<void> {
    await until(`${runs} end checkpoint(s) of ${requirementId}`, async () => {
      const { items } = await ok(
        manager.api.GET('/api/requirements/{id}/checkpoints', { params: { path: { id: requirementId } } }),
      );
      return items.filter((c) => c.kind === 'run_end').length >= runs || undefined;
    });
  }

  /** A Requirement whose first run made `commands` (each one a commit, or any shell). */
  async function worked(title: string, ...commands: string[]): Promise<Requirement> {
    const requirement = await runOnce(manager, title, commands.join(' && '));
    // The radar looks after the run's refresh and checkpoint: wait for its answer too.
    await endCheckpoints(requirement.id, 1);
    await ok(manager.api.GET('/api/conflicts'));
    return until(`the radar's answer for ${title}`, async () => {
      const now = await get(manager, requirement.id);
      return now.landing.checkedAt !== null ? now : undefined;
    });
  }

  beforeAll(async () => {
    sandbox = makeSandbox();
    repo = sandbox.workspace;
    initRepository(repo, {
      'README.md': '# repo\n',
      'shared.txt': 'one\ntwo\nthree\n',
      'src/a.ts': 'export const a = 1;\n',
    });
    manager = await startInProcess({ env: AGENTS, sandbox });
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('merge: a merge commit on main, the clean checkout of main moves with it, and the Requirement is done', async () => {
    const before = git(repo, 'rev-parse', 'main').trim();
    const requirement = await worked(
      'Add b',
      commit({ 'src/a.ts': 'export const a = 2;\n', 'src/b.ts': 'export const b = 1;\n' }, 'add b'),
    );
    const branch = requirement.worktree!.branch!;
    const head = git(repo, 'rev-parse', branch).trim();
    expect(requirement.landing).toMatchObject({ landedAt: null, mergesCleanly: true });

    const landed = await ok(land(manager, requirement.id, 'merge'));
    const main = git(repo, 'rev-parse', 'main').trim();
    expect(landed).toMatchObject({ commit: main, method: 'merge', pullRequest: null });
    expect(git(repo, 'rev-list', '--parents', '-n', '1', 'main').trim().split(' ')).toEqual([main, before, head]);
    expect(git(repo, 'log', '-1', '--format=%s', 'main').trim()).toBe(`Merge branch '${branch}': Add b`);
    // The person's checkout was on main and clean: it is at the new commit, files and all.
    expect(git(repo, 'rev-parse', 'HEAD').trim()).toBe(main);
    expect(git(repo, 'status', '--porcelain')).toBe('');
    expect(fs.readFileSync(path.join(repo, 'src/b.ts'), 'utf8')).toBe('export const b = 1;\n');
    expect(landed.requirement).toMatchObject({
      landing: { landedCommit: main, landedMethod: 'merge' },
      status: 'done',
    });
    expect(landed.requirement.landing.landedAt).not.toBeNull();
    // Nothing more to land: a second land says so and changes nothing.
    await refusal(land(manager, requirement.id, 'merge'), 409, 'nothing_to_land');
  });

  it("squash: one commit with the title and the agent's summary; the branch follows it", async () => {
    const requirement = await worked(
      'Squash me',
      commit({ 'sq/one.txt': 'first\n' }, 'first'),
      commit({ 'sq/two.txt': 'second\n' }, 'second'),
    );
    // The person commits on main meanwhile: the squash lands on top of it.
    writeFiles(repo, { 'person.txt': 'mine\n' });
    git(repo, 'add', 'person.txt');
    git(repo, 'commit', '-q', '-m', 'person');
    const base = git(repo, 'rev-parse', 'main').trim();
    const landed = await ok(land(manager, requirement.id, 'squash'));
    expect(git(repo, 'rev-list', '--parents', '-n', '1', 'main').trim().split(' ')).toEqual([landed.commit, base]);
    const message = git(repo, 'log', '-1', '--format=%B', 'main');
    expect(message.split('\n')[0]).toBe('Squash me');
    expect(message).toContain('Done.'); // the agent's last message
    expect(message).toContain(`Requirement: ${requirement.id}`);
    expect(git(repo, 'ls-tree', '-r', '--name-only', 'main')).toEqual(expect.stringContaining('sq/two.txt'));
    expect(git(repo, 'rev-parse', requirement.worktree!.branch!).trim()).toBe(landed.commit);
    expect(git(requirement.worktree!.path!, 'status', '--porcelain')).toBe('');
  });

  it('lands a squash with the message the person wrote, offers the default first, and records the work it left', async () => {
    const requirement = await worked('Own message', commit({ 'own/one.txt': 'one\n' }, 'one'));
    const offered = await ok(
      manager.api.GET('/api/requirements/{id}/land-message', {
        params: { path: { id: requirement.id }, query: { method: 'squash' } },
      }),
    );
    expect(offered).toEqual({ message: `Own message\n\nDone.\n\nRequirement: ${requirement.id}`, method: 'squash' });
    const merge = await ok(
      manager.api.GET('/api/requirements/{id}/land-message', {
        params: { path: { id: requirement.id }, query: { method: 'merge' } },
      }),
    );
    expect(merge.message.split('\n')[0]).toBe(`Merge branch '${requirement.worktree!.branch}': Own message`);
    // Refusals write nothing: a message with a rebase or a pull request, a blank one, a control character.
    const before = refs(repo);
    await expectRefused(
      manager.dataDirectory(),
      () => land(manager, requirement.id, 'rebase', { message: 'x' }),
      400,
      'message_not_applicable',
    );
    await expectRefused(
      manager.dataDirectory(),
      () => land(manager, requirement.id, 'pull_request', { message: 'x' }),
      400,
      'message_not_applicable',
    );
    await expectRefused(
      manager.dataDirectory(),
      () => land(manager, requirement.id, 'squash', { message: ' \n\t' }),
      400,
      'empty_message',
    );
    await expectRefused(
      manager.dataDirectory(),
      () => land(manager, requirement.id, 'squash', { message: 'a\u0000b' }),
      400,
    );
    await expectRefused(
      manager.dataDirectory(),
      () => land(manager, requirement.id, 'squash', { message: 'x'.repeat(20_001) }),
      400,
    );
    await expectRefused(
      manager.dataDirectory(),
      () =>
        // A method without a message of its own, asked for one: untyped on purpose.
        sendUntyped(manager.origin, 'GET', `/api/requirements/${requirement.id}/land-message?method=rebase`),
      400,
    );
    expect(refs(repo)).toBe(before);

    const written = 'Own message, reviewed\n\nWhat I checked: the one file.\n';
    const landed = await ok(land(manager, requirement.id, 'squash', { message: written }));
    expect(git(repo, 'log', '-1', '--format=%B', 'main').trimEnd()).toBe(written.trimEnd());
    // The work the land left is the branch now: nothing new to land, and the menu says so.
    const after = await get(manager, requirement.id);
    expect(after.landing).toMatchObject({ landedCommit: landed.commit, landedWork: landed.commit });
    expect(after.worktree!.headSha).toBe(landed.commit);
  });

  it("rebase: the branch's commits replayed on main, each with its own author and message", async () => {
    const requirement = await worked(
      'Rebase me',
      commit({ 'rb/one.txt': '1\n' }, 'rb one', 'Ada'),
      commit({ 'rb/two.txt': '2\n' }, 'rb two', 'Ada'),
    );
    writeFiles(repo, { 'person2.txt': 'mine\n' });
    git(repo, 'add', 'person2.txt');
    git(repo, 'commit', '-q', '-m', 'person again');
    const base = git(repo, 'rev-parse', 'main').trim();
    const landed = await ok(land(manager, requirement.id, 'rebase'));
    expect(git(repo, 'log', '--format=%s|%an|%P', `${base}..main`).trim().split('\n')).toEqual([
      `rb two|Ada|${git(repo, 'rev-parse', 'main~1').trim()}`,
      `rb one|Ada|${base}`,
    ]);
    expect(landed.commit).toBe(git(repo, 'rev-parse', 'main').trim());
    expect(git(repo, 'status', '--porcelain')).toBe('');
  });

  it('refuses a conflict with the files, for every method, leaving every branch and checkout as it was', async () => {
    const first = await worked('Shared first', commit({ 'shared.txt': 'one\nTWO from first\nthree\n' }, 'first edit'));
    const second = await worked(
      'Shared second',
      commit({ 'shared.txt': 'one\nTWO from second\nthree\n' }, 'second edit'),
    );
    await ok(land(manager, first.id, 'squash'));
    // The base move made the second conflict: its agent is told (once) and its run ends before the refusals.
    await until('the base-conflict message', async () => {
      const items = (
        await ok(
          manager.api.GET('/api/requirements/{id}/messages', {
            params: { path: { id: second.id }, query: { limit: 200 } },
          }),
        )
      ).items;
      return items.some((m) => m.code === 'landing.conflict') || undefined;
    });
    await settled(manager, second.id, 2);
    await endCheckpoints(second.id, 2);
    await ok(manager.api.GET('/api/conflicts'));
    const worktreeState = () => [
      git(second.worktree!.path!, 'rev-parse', 'HEAD'),
      git(second.worktree!.path!, 'status', '--porcelain=v1', '--untracked-files=all'),
    ];
    const [refsBefore, checkoutBefore, worktreeBefore] = [refs(repo), checkoutSnapshot(repo), worktreeState()];
    for (const method of ['merge', 'squash', 'rebase'] as const) {
      const body = await expectRefused(
        manager.dataDirectory(),
        () => land(manager, second.id, method),
        409,
        'land_conflict',
      );
      expect(body.details).toEqual(['shared.txt']);
      expect(body.message).toContain('shared.txt');
    }
    expect(refs(repo)).toBe(refsBefore);
    expect(checkoutSnapshot(repo)).toEqual(checkoutBefore);
    expect(worktreeState()).toEqual(worktreeBefore);
    // The radar says so too, once it looked at the new base.
    await until('the radar to see the conflict with main', async () => {
      const now = await get(manager, second.id);
      return now.landing.mergesCleanly === false && now.landing.conflictPaths.includes('shared.txt') ? now : undefined;
    });
  });

  it("refuses while main is checked out with uncommitted changes, naming them; leaves the person's other branch alone", async () => {
    const requirement = await worked('Checkout cases', commit({ 'co/file.txt': 'x\n' }, 'co'));
    writeFiles(repo, { 'README.md': '# repo, being edited\n' });
    const [refsBefore, checkoutBefore] = [refs(repo), checkoutSnapshot(repo)];
    const body = await expectRefused(
      manager.dataDirectory(),
      () => land(manager, requirement.id, 'merge'),
      409,
      'base_checked_out_dirty',
    );
    expect(body.message).toContain('README.md');
    expect(body.details).toEqual(['README.md']);
    expect(refs(repo)).toBe(refsBefore);
    expect(checkoutSnapshot(repo)).toEqual(checkoutBefore);
    // On another branch, with the same edit: main moves, the checkout does not change at all.
    git(repo, 'checkout', '-q', '-b', 'person-branch');
    const onBranch = checkoutSnapshot(repo);
    const landed = await ok(land(manager, requirement.id, 'merge'));
    expect(git(repo, 'rev-parse', 'main').trim()).toBe(landed.commit);
    expect(checkoutSnapshot(repo)).toEqual(onBranch);
    git(repo, 'checkout', '-q', '--', 'README.md');
    git(repo, 'checkout', '-q', 'main');
  });

  it('refuses uncommitted work in the worktree, or commits it first with commitPending', async () => {
    const requirement = await worked(
      'Pending work',
      commit({ 'pw/done.txt': 'done\n' }, 'done part'),
      put('pw/left.txt', 'not committed\n'),
    );
    expect(requirement.worktree!.dirty).toBe(true);
    const body = await expectRefused(
      manager.dataDirectory(),
      () => land(manager, requirement.id, 'squash'),
      409,
      'worktree_dirty',
    );
    expect(body.details).toEqual(['pw/left.txt']);
    const landed = await ok(land(manager, requirement.id, 'squash', { commitPending: true }));
    expect(git(repo, 'show', `${landed.commit}:pw/left.txt`)).toBe('not committed\n');
    expect(git(requirement.worktree!.path!, 'status', '--porcelain')).toBe('');
  });

  it('refuses what cannot be landed: a run in progress, in place, no branch yet, a bad method', async () => {
    const inPlace = await createRequirement(manager, { isolation: 'in_place', title: 'In place' });
    const fresh = await createRequirement(manager, { title: 'Not started' });
    // The earlier tests' lands end in radar passes that write after their requests answered
    // (on PostgreSQL one landed inside a refusal's window): the checks start once nothing moves.
    await ok(manager.api.GET('/api/conflicts'));
    let last = '';
    await until('the store to be quiet', async () => {
      const now = JSON.stringify(await snapshotStore(manager.dataDirectory(), { exceptBackground: true }));
      if (now === last) {
        return true;
      }
      last = now;
      await new Promise((resolve) => setTimeout(resolve, 500));
      return false;
    });
    await expectRefused(manager.dataDirectory(), () => land(manager, inPlace.id, 'merge'), 409, 'not_landable');
    await expectRefused(manager.dataDirectory(), () => land(manager, fresh.id, 'merge'), 409, 'nothing_to_land');
    await expectRefused(manager.dataDirectory(), () => land(manager, fresh.id, 'octopus' as Method), 400);
    await expectRefused(manager.dataDirectory(), () => land(manager, 'req_missing', 'merge'), 404);
  });

  it("refuses while the agent's run is committing, then lands its commit once the run ended", async () => {
    const requirement = await worked('Racing', commit({ 'race/one.txt': '1\n' }, 'one'));
    const flag = path.join(sandbox.shared, 'race-go');
    // The next run waits for the flag, then commits: the land comes in while it works.
    await reply(
      manager,
      requirement.id,
      sh(`while [ ! -f '${flag}' ]; do sleep 0.05; done; ${commit({ 'race/two.txt': '2\n' }, 'two')}`),
    );
    await until('the run to be working', async () =>
      (await get(manager, requirement.id)).session.state === 'running' ? true : undefined,
    );
    const before = refs(repo);
    await refusal(land(manager, requirement.id, 'squash'), 409, 'run_active');
    expect(refs(repo)).toBe(before);
    fs.writeFileSync(flag, '');
    await settled(manager, requirement.id, 2);
    const landed = await ok(land(manager, requirement.id, 'squash'));
    expect(git(repo, 'show', `${landed.commit}:race/two.txt`)).toBe('2\n');
    expect(git(repo, 'show', `${landed.commit}:race/one.txt`)).toBe('1\n');
  });

  it('wakes a dependent waiting for the merge, once', async () => {
    const target = await worked('Lands first', commit({ 'dep/x.txt': 'x\n' }, 'x'));
    const dependent = await createRequirement(manager, {
      autoStart: true,
      dependsOn: [{ requirementId: target.id, until: 'merged' }],
      title: 'Waits for the land',
    });
    await ok(land(manager, target.id, 'merge', { markDone: false }));
    expect((await get(manager, target.id)).status).toBe('waiting_confirmation');
    await settled(manager, dependent.id, 1);
    const messages = (
      await ok(
        manager.api.GET('/api/requirements/{id}/messages', {
          params: { path: { id: dependent.id }, query: { limit: 200 } },
        }),
      )
    ).items;
    expect(messages.filter((m) => m.code === 'dependency.met')).toHaveLength(1);
    expect((await get(manager, dependent.id)).dependsOn).toEqual([expect.objectContaining({ state: 'met' })]);
    // Confirming it done later meets nothing twice.
    await ok(manager.api.POST('/api/requirements/{id}/confirm', { params: { path: { id: target.id } } }));
    const again = (
      await ok(
        manager.api.GET('/api/requirements/{id}/messages', {
          params: { path: { id: dependent.id }, query: { limit: 200 } },
        }),
      )
    ).items;
    expect(again.filter((m) => m.code === 'dependency.met')).toHaveLength(1);
  });
});

describe('the conflict radar', () => {
  let sandbox: Sandbox;
  let manager: TestManager;

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, {
      'README.md': '# repo\n',
      'gone.txt': 'will be deleted\n',
      'moved.txt': 'a\nb\nc\n',
      'twice.txt': 'renamed twice\n',
      'tri.txt': 'one\ntwo\nthree\n',
    });
    manager = await startInProcess({ env: AGENTS, sandbox });
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  const worked = (title: string, command: string) => runOnce(manager, title, command);

  it('finds conflicts on added, deleted, renamed and modified files, and three mutually conflicting branches, without touching a checkout', async () => {
    const events = await connectSse(`${manager.origin}/api/events`);
    const checkout = checkoutSnapshot(sandbox.workspace);
    const addA = await worked('Adds new.txt one way', commit({ 'new.txt': 'A\n' }, 'add A'));
    const addB = await worked('Adds new.txt another way', commit({ 'new.txt': 'B\n' }, 'add B'));
    const deletes = await worked('Deletes gone.txt', commit({ 'gone.txt': null }, 'delete'));
    const edits = await worked('Edits gone.txt', commit({ 'gone.txt': 'edited\n' }, 'edit gone'));
    const renames = await worked('Renames moved.txt', `git mv moved.txt renamed.txt && git commit -q -m rename`);
    const editsMoved = await worked('Edits moved.txt', commit({ 'moved.txt': 'a\nB\nc\n' }, 'edit moved'));
    const renameX = await worked('Renames twice.txt to x', `git mv twice.txt x.txt && git commit -q -m x`);
    const renameY = await worked('Renames twice.txt to y', `git mv twice.txt y.txt && git commit -q -m y`);
    const tri = [];
    for (const who of ['one', 'two', 'three']) {
      tri.push(await worked(`Tri ${who}`, commit({ 'tri.txt': `one\n${who} was here\nthree\n` }, `tri ${who}`)));
    }
    const untouched = await worked('Unrelated', commit({ 'unrelated.txt': 'u\n' }, 'unrelated'));
    const radar = await until('the radar to have looked at every Requirement', async () => {
      const now = await ok(manager.api.GET('/api/conflicts'));
      return now.requirements.length === 12 ? now : undefined;
    });
    const pair = (a: Requirement, b: Requirement) =>
      radar.pairs.find((p) => (p.a === a.id && p.b === b.id) || (p.a === b.id && p.b === a.id));
    expect(pair(addA, addB)?.paths).toEqual(['new.txt']);
    expect(pair(deletes, edits)?.paths).toEqual(['gone.txt']);
    // A rename and an edit of the same file merge cleanly (git follows the rename); two renames do not.
    expect(pair(renames, editsMoved)).toBeUndefined();
    expect(pair(renameX, renameY)?.paths).toEqual(expect.arrayContaining(['twice.txt']));
    expect(pair(tri[0], tri[1])?.paths).toEqual(['tri.txt']);
    expect(pair(tri[0], tri[2])?.paths).toEqual(['tri.txt']);
    expect(pair(tri[1], tri[2])?.paths).toEqual(['tri.txt']);
    expect(radar.pairs.filter((p) => p.a === untouched.id || p.b === untouched.id)).toEqual([]);
    expect(radar.pairs).toHaveLength(6);
    expect(radar.requirements.every((r) => r.mergesCleanly === true && r.behindBy === 0)).toBe(true);
    // On every Requirement response, with the other's title.
    const one = await get(manager, tri[0].id);
    expect(one.landing.conflictsWith.map((c) => [c.title, c.paths])).toEqual([
      ['Tri two', ['tri.txt']],
      ['Tri three', ['tri.txt']],
    ]);
    await events.waitUntil((e) => e.event === 'landing.conflicts.updated', 'the radar event');
    events.close();
    expect(checkoutSnapshot(sandbox.workspace)).toEqual(checkout);

    // A base move: landing one side turns the other's pair into a conflict with the base, and
    // its agent is told once; an agent whose work still merges is told nothing.
    await ok(land(manager, addA.id, 'merge'));
    const moved = await until('the radar to see the base move', async () => {
      const now = await get(manager, addB.id);
      return now.landing.mergesCleanly === false ? now : undefined;
    });
    expect(moved.landing).toMatchObject({ behindBy: 2, conflictPaths: ['new.txt'], conflictsWith: [] });
    const told = await until('the conflict message', async () => {
      const items = (
        await ok(
          manager.api.GET('/api/requirements/{id}/messages', {
            params: { path: { id: addB.id }, query: { limit: 200 } },
          }),
        )
      ).items;
      return items.some((m) => m.code === 'landing.conflict') ? items : undefined;
    });
    expect(told.filter((m) => m.code === 'landing.conflict')).toHaveLength(1);
    expect(told.find((m) => m.code === 'landing.conflict')!.body).toContain('new.txt');
    await settled(manager, addB.id, 2); // the message woke its agent
    const quiet = (
      await ok(
        manager.api.GET('/api/requirements/{id}/messages', {
          params: { path: { id: untouched.id }, query: { limit: 200 } },
        }),
      )
    ).items;
    expect(quiet.filter((m) => m.code === 'landing.conflict')).toEqual([]);
    expect((await get(manager, untouched.id)).landing).toMatchObject({ behindBy: 2, mergesCleanly: true }); // the merge commit and A's own
  });

  it('looks at uncommitted work in a worktree too', async () => {
    const committed = await worked('Committed edit', commit({ 'README.md': '# committed\n' }, 'readme'));
    const pending = await worked('Pending edit', put('README.md', '# pending\n'));
    expect(pending.worktree!.dirty).toBe(true);
    await until('the radar to see the uncommitted conflict', async () => {
      const now = await ok(manager.api.GET('/api/conflicts'));
      const found = now.pairs.find((p) => [p.a, p.b].includes(committed.id) && [p.a, p.b].includes(pending.id));
      return found?.paths.includes('README.md') ? found : undefined;
    });
  });
});

describe('the merge queue', () => {
  let sandbox: Sandbox;
  let manager: TestManager;

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n', 'q.txt': 'one\ntwo\nthree\n' });
    manager = await startInProcess({ env: AGENTS, sandbox });
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  const worked = (title: string, command: string) => runOnce(manager, title, command);

  const queue = () => ok(manager.api.GET('/api/landing-queue'));
  const enqueue = (requirementId: string) =>
    manager.api.POST('/api/landing-queue', { body: { method: 'merge', requirementId } });
  const rebaseRequests = async (id: string) =>
    (
      await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id }, query: { limit: 200 } } }))
    ).items.filter((m) => m.code === 'landing.rebase_requested');

  it('lands one at a time, pauses on a conflict and asks its agent once, lands the next clean one past it, then the paused one after its rebase', async () => {
    const first = await worked('Queue first', commit({ 'q.txt': 'one\nfirst\nthree\n' }, 'first'));
    const second = await worked('Queue second', commit({ 'q.txt': 'one\nsecond\nthree\n' }, 'second'));
    const third = await worked('Queue third', commit({ 'third.txt': 'third\n' }, 'third'));
    // Queued in one go, before the first lands: the second conflicts with it and pauses; the
    // third does not wait behind it (issue 47 §5).
    await ok(enqueue(first.id), 201);
    await ok(enqueue(second.id), 201);
    await ok(enqueue(third.id), 201);
    await refusal(enqueue(third.id), 409, 'already_queued');
    const paused = await until('the queue to pause on the second and land the third', async () => {
      const now = await queue();
      return now.items.length === 1 && now.items[0].state === 'paused' ? now : undefined;
    });
    expect(paused.items.map((i) => [i.requirementId, i.position, i.state])).toEqual([[second.id, 1, 'paused']]);
    expect(paused.items[0].conflictPaths).toEqual(['q.txt']);
    expect((await get(manager, first.id)).landing.landedMethod).toBe('merge');
    expect((await get(manager, third.id)).landing.landedMethod).toBe('merge');
    expect(git(sandbox.workspace, 'show', 'main:third.txt')).toBe('third\n');
    const main = git(sandbox.workspace, 'rev-parse', 'main').trim();
    await until('the rebase request', async () => ((await rebaseRequests(second.id)).length > 0 ? true : undefined));
    // Asked against the base it conflicted with: the first's land (the third's came after).
    const [request] = await rebaseRequests(second.id);
    expect(request.body).toContain('q.txt');
    // The request woke the agent; its run changed nothing, so the queue stays paused and asks nothing more.
    await settled(manager, second.id, 2);
    await ok(manager.api.GET('/api/conflicts')); // waits for the pass the run's end started
    expect((await queue()).items[0]).toMatchObject({ requirementId: second.id, state: 'paused' });
    expect(await rebaseRequests(second.id)).toHaveLength(1);

    // Refusals of a wrong order.
    await refusal(
      manager.api.PUT('/api/landing-queue', { body: { requirementIds: [third.id] } }),
      400,
      'queue_order_mismatch',
    );
    await refusal(
      manager.api.PUT('/api/landing-queue', { body: { requirementIds: [second.id, second.id] } }),
      400,
      'queue_order_mismatch',
    );

    // The agent rebases (its branch's side wins), its run ends clean: the queue lands it.
    await reply(manager, second.id, sh(`git rebase -q -X theirs ${main}`));
    await until('the queue to empty', async () => ((await queue()).items.length === 0 ? true : undefined), 60_000);
    expect(git(sandbox.workspace, 'show', 'main:q.txt')).toBe('one\nsecond\nthree\n');
    expect(git(sandbox.workspace, 'show', 'main:third.txt')).toBe('third\n');
    expect(await rebaseRequests(second.id)).toHaveLength(1);
    expect((await get(manager, second.id)).landing.landedAt).not.toBeNull();
  });

  it('reorders and removes what waits, while a clean one lands past it', async () => {
    const blocker = await worked('Blocker', commit({ 'q.txt': 'blocker\n' }, 'blocker'));
    const other = await worked('Other blocker', commit({ 'q.txt': 'other\n' }, 'other'));
    const spoiler = await worked('Spoiler', commit({ 'q.txt': 'spoiler\n' }, 'spoiler'));
    await ok(land(manager, spoiler.id, 'merge'));
    await settled(manager, blocker.id, 2); // told of the conflict with the new base, its agent ran
    await settled(manager, other.id, 2);
    // Both conflict with main now: the queue pauses on each.
    await ok(enqueue(blocker.id), 201);
    await ok(enqueue(other.id), 201);
    await until('both paused', async () =>
      (await queue()).items.filter((i) => i.state === 'paused').length === 2 ? true : undefined,
    );
    const a = await worked('Later A', commit({ 'a.txt': 'a\n' }, 'a'));
    await ok(enqueue(a.id), 201);
    await until('A to land past them and leave the queue', async () =>
      (await get(manager, a.id)).landing.landedAt !== null &&
      !(await queue()).items.some((i) => i.requirementId === a.id)
        ? true
        : undefined,
    );
    const reordered = await ok(
      manager.api.PUT('/api/landing-queue', { body: { requirementIds: [other.id, blocker.id] } }),
    );
    expect(reordered.items.map((i) => [i.requirementId, i.position])).toEqual([
      [other.id, 1],
      [blocker.id, 2],
    ]);
    const removed = await ok(
      manager.api.DELETE('/api/landing-queue/{requirementId}', { params: { path: { requirementId: blocker.id } } }),
    );
    expect(removed.items.map((i) => i.requirementId)).toEqual([other.id]);
    await refusal(
      manager.api.DELETE('/api/landing-queue/{requirementId}', { params: { path: { requirementId: blocker.id } } }),
      404,
      'not_queued',
    );
    expect((await get(manager, blocker.id)).landing.landedAt).toBeNull();
  });
});
