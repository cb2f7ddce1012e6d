import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { boardNameFromOrigin, boardSchema } from '@server/core/board/board-name';

import { ok } from './support/api';
import { onPostgres } from './support/db-snapshot';
import { git, makeBareOrigin, settled } from './support/git-repo';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from './support/model-stub';
import { dropSchemasSync } from './support/postgres';
import { until } from './support/wait';

jest.setTimeout(240_000);

const codex = REAL_AGENT_CLIS.find((cli) => cli.provider === 'codex')!;

/**
 * Team mode (issue 29 §5): a person moves a Requirement to their own runner. Two runners, each with
 * its own home, its own Codex home (a CLI's sessions live on its machine) and its own clone of one
 * bare origin, share a board on PostgreSQL; the real Codex CLI runs through the model stub. A's run
 * commits and its branch is pushed to origin when the session rests; A is killed (-9) during its
 * next run; Bob moves the Requirement to B, which fetches the branch, makes a worktree of its own,
 * and goes on as a new Codex session told the conversation so far, on top of A's commit.
 */
(onPostgres() ? describe : describe.skip)(
  'team mode: moving a Requirement to another runner, with the real Codex CLI',
  () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'am-e2e-move-'));
    const origin = path.join(base, 'origin.git');
    const schema = boardSchema(boardNameFromOrigin(origin));
    let stub: ModelStub;
    let sandboxA: Sandbox;
    let sandboxB: Sandbox;
    let a: ManagerProcess;
    let b: ManagerProcess;
    const agentEnv: Record<string, Record<string, string>> = {};

    const startRunner = (sandbox: Sandbox, person: string) =>
      startManager({
        args: ['--board', '--person-name', person],
        env: {
          ...agentEnv[person],
          CODE_FACTORY_CLAUDE_EXECUTABLE: codex.executable,
          CODE_FACTORY_CODEX_EXECUTABLE: codex.executable,
          GH_TOKEN: '',
          GITHUB_TOKEN: '',
        },
        sandbox,
      });
    const create = (manager: ManagerProcess, title: string) =>
      ok(manager.api.POST('/api/requirements', { body: { description: 'd', provider: 'codex', title } }), 201);
    const get = (manager: ManagerProcess, id: string) =>
      ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
    const runsOf = async (manager: ManagerProcess, id: string) =>
      (await ok(manager.api.GET('/api/runs', { params: { query: { limit: 20, requirementId: id } } }))).items.filter(
        (r) => r.role === 'rd',
      );
    const move = (manager: ManagerProcess, id: string) =>
      manager.api.POST('/api/requirements/{id}/move', { params: { path: { id } } });
    /** What origin has on a branch, or null. */
    const onOrigin = (branch: string): string | null => {
      try {
        return git(origin, 'rev-parse', '--verify', '-q', `refs/heads/${branch}`).trim();
      } catch {
        return null;
      }
    };
    /** Every request body the CLI sent the model for this Requirement, as JSON text. */
    const sentFor = (marker: string): string[] =>
      stub.requests.map((request) => JSON.stringify(request.body)).filter((body) => body.includes(marker));

    beforeAll(async () => {
      stub = await ModelStub.start();
      makeBareOrigin(base);
      sandboxA = makeSandbox();
      sandboxB = makeSandbox();
      for (const [sandbox, person] of [
        [sandboxA, 'Ada'],
        [sandboxB, 'Bob'],
      ] as const) {
        fs.rmSync(sandbox.workspace, { force: true, recursive: true });
        git(base, 'clone', '-q', origin, sandbox.workspace);
        git(sandbox.workspace, 'config', 'user.name', person);
        git(sandbox.workspace, 'config', 'user.email', `${person.toLowerCase()}@example.com`);
        const dir = fs.mkdtempSync(path.join('/var/tmp', `am-move-${person}-`));
        agentEnv[person] = codex.env(stub, dir);
      }
      [a, b] = await Promise.all([startRunner(sandboxA, 'Ada'), startRunner(sandboxB, 'Bob')]);
    });

    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      await stub?.close();
      sandboxA?.cleanup();
      sandboxB?.cleanup();
      dropSchemasSync([schema]);
      fs.rmSync(base, { force: true, recursive: true });
      for (const env of Object.values(agentEnv)) {
        fs.rmSync(env.CODEX_HOME, { force: true, recursive: true });
        fs.rmSync(env.HOME, { force: true, recursive: true });
      }
    });

    it('refuses a move that makes no sense: off a board never started, already here, or running on a runner that is online', async () => {
      const fresh = await create(a, 'never started');
      const notStarted = await move(b, fresh.id);
      expect(notStarted.status).toBe(409);
      expect(notStarted.error?.code).toBe('not_started');

      const running = await create(a, 'running on A');
      stub.scriptFor(`hold ${running.id}`, [{ hang: true }]);
      await ok(
        a.api.POST('/api/requirements/{id}/start', {
          body: { message: `hold ${running.id}` },
          params: { path: { id: running.id } },
        }),
        202,
      );
      const here = await move(a, running.id);
      expect(here.status).toBe(409);
      expect(here.error?.code).toBe('already_here');
      const active = await move(b, running.id);
      expect(active.status).toBe(409);
      expect(active.error?.code).toBe('run_active');
      expect(active.error?.message).toContain("Ada's runner");
      // Nothing changed: it still runs on A, its one run going on.
      // (B reads the runners again when asked for one it has not seen: A may have joined after B's last heartbeat.)
      await until(
        'B names Ada',
        async () => ((await get(b, running.id)).runner?.person === 'Ada' ? true : undefined),
        5_000,
      );
      expect((await runsOf(a, running.id)).map((r) => r.status)).toEqual(['running']);
      // Stopped from B (carried to A), it can move.
      await ok(
        b.api.POST('/api/requirements/{id}/interrupt', {
          body: { mode: 'stop' },
          params: { path: { id: running.id } },
        }),
        202,
      );
      await until('the stopped run ended', async () =>
        (await runsOf(a, running.id))[0]?.status === 'cancelled' ? true : undefined,
      );
      expect(
        await until('B sees it resting', async () =>
          (await get(b, running.id)).session.state !== 'running' ? true : undefined,
        ),
      ).toBe(true);
      const moved = await ok(move(b, running.id));
      expect(moved.requirement.runner?.person).toBe('Bob');
      expect(moved.orphanedRunId).toBeNull();
      // A person's stop stays a pause: nothing runs until someone starts it.
      expect(moved.run).toBeNull();
    });

    it("moves a Requirement from a dead runner: its branch from origin, a worktree on B, a new Codex session told the conversation so far, finishing there on top of A's commit", async () => {
      const requirement = await create(a, 'Moved work');
      const first = `step 1 ${requirement.id}`;
      // Longer than the first: B's prompt holds both (the conversation so far), and the stub matches the longest marker first.
      const second = `now step 2, please ${requirement.id}`;
      stub.scriptFor(first, [
        { shell: 'echo A > a.txt && git add a.txt && git commit -q -m "A: step 1"' },
        { text: 'Step 1 is committed on A.' },
      ]);
      await ok(
        a.api.POST('/api/requirements/{id}/start', {
          body: { message: first },
          params: { path: { id: requirement.id } },
        }),
        202,
      );
      const done = await settled(a, requirement.id, 1);
      expect(done.run.status).toBe('succeeded');
      const branch = done.requirement.worktree!.branch!;
      const headOnA = done.requirement.worktree!.headSha!;
      // The session rested: A pushed the branch to origin.
      await until('A pushed its branch', async () => (onOrigin(branch) === headOnA ? true : undefined));

      // The next run hangs on the model; A dies during it.
      stub.scriptFor(second, [
        { hang: true },
        { shell: 'test -f a.txt && echo B > b.txt && git add b.txt && git commit -q -m "B: step 2"' },
        { text: 'Step 2 is committed on B.' },
      ]);
      const before = stub.requests.length;
      await ok(
        a.api.POST('/api/requirements/{id}/reply', {
          body: { message: second },
          params: { path: { id: requirement.id } },
        }),
        202,
      );
      await until('A asked the model for step 2', async () =>
        stub.requests.slice(before).some((r) => JSON.stringify(r.body).includes(second)) ? true : undefined,
      );
      const lost = (await runsOf(a, requirement.id))[0];
      expect(lost.status).toBe('running');
      await a.kill9();
      await until(
        'B shows A offline',
        async () => ((await get(b, requirement.id)).runner?.online === false ? true : undefined),
        30_000,
      );
      const offline = await get(b, requirement.id);
      // Offline, not failed: the run is on a machine the board cannot see.
      expect(offline.session.state).toBe('running');

      const moved = await ok(move(b, requirement.id));
      expect(moved.orphanedRunId).toBe(lost.id);
      expect(moved.branch).toEqual({ branch, fetched: headOnA, reason: null });
      expect(moved.requirement.runner).toMatchObject({ online: true, person: 'Bob' });
      expect(moved.run).not.toBeNull();

      const finished = await settled(b, requirement.id, 3);
      expect(finished.run.id).toBe(moved.run!.id);
      expect(finished.run.status).toBe('succeeded');
      const worktree = finished.requirement.worktree!;
      expect(worktree.branch).toBe(branch);
      expect(worktree.path!.startsWith(sandboxB.home)).toBe(true);
      // B's commit on top of A's, on the same branch, in B's clone.
      expect(git(worktree.path!, 'log', '--format=%s', 'HEAD').trim().split('\n')).toEqual([
        'B: step 2',
        'A: step 1',
        'initial',
      ]);
      // Its session rested on B: B pushed the branch on.
      await until('B pushed its branch', async () => (onOrigin(branch) === worktree.headSha ? true : undefined));

      // The CLI on B was a new session (the Requirement's header again) told what was said before.
      const onB = sentFor(second).filter((body) => body.includes('The conversation so far'));
      expect(onB.length).toBeGreaterThan(0);
      expect(onB[0]).toContain(`# Requirement ${requirement.id}`);
      expect(onB[0]).toContain('Step 1 is committed on A.');
      expect(onB[0]).toContain(first);

      const runs = await runsOf(b, requirement.id);
      expect(runs.map((r) => r.status)).toEqual(['succeeded', 'failed', 'succeeded']);
      expect(runs[1].error).toContain("Ada's runner");
      const messages = (
        await ok(
          b.api.GET('/api/requirements/{id}/messages', {
            params: { path: { id: requirement.id }, query: { limit: 50 } },
          }),
        )
      ).items;
      const notice = messages.find((m) => m.code === 'requirement.moved');
      expect(notice).toMatchObject({
        args: { branch, commit: headOnA.slice(0, 12), fromPerson: 'Ada', orphanedRunId: lost.id, toPerson: 'Bob' },
        author: 'system',
      });
      expect(notice?.body).toContain('new session given the conversation so far');

      // A comes back: the Requirement is B's now, and A's restart leaves it alone.
      a = await startRunner(sandboxA, 'Ada');
      const seen = await get(a, requirement.id);
      expect(seen.runner?.person).toBe('Bob');
      expect((await runsOf(a, requirement.id)).map((r) => r.status)).toEqual(['succeeded', 'failed', 'succeeded']);
      // And a start from A is refused, naming Bob's runner.
      const start = await a.api.POST('/api/requirements/{id}/start', {
        body: { message: 'from A' },
        params: { path: { id: requirement.id } },
      });
      expect(start.status).toBe(409);
      expect(start.error?.code).toBe('runs_on_other_runner');
    });
  },
);
