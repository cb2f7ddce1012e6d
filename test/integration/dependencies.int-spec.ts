import type { INestApplicationContext } from '@nestjs/common';

import { Database } from '@server/core/database/database.service';
import { DependenciesService } from '@server/dependencies/dependencies.service';
import { HUMAN_ACTOR, SYSTEM_ACTOR } from '@server/events/event-log.service';
import { MessagesService } from '@server/messages/messages.service';
import { PullRequestsService } from '@server/pull-requests/pull-requests.service';
import type { RequirementResponseDto } from '@server/requirements/dto/requirement-response.dto';
import { RequirementsService } from '@server/requirements/requirements.service';
import { RunLifecycle } from '@server/runs/run-lifecycle.service';

import { until } from '../support/wait';
import { Workspace, describeStores, makeWorkspace, openServices, refusal, rows } from './harness';

jest.setTimeout(30_000);

/**
 * Requirements that wait for others (issue 18 §2), on DependenciesService and the services whose
 * transitions meet a dependency: no cycle is ever stored, a start waits for every dependency, and
 * a confirmation or the merge of the last PR meets it, tells the dependent once and wakes it when
 * it should.
 */
describeStores('Dependencies', (kind) => {
  let workspace: Workspace;
  let app: INestApplicationContext;

  const requirements = () => app.get(RequirementsService);
  const dependencies = () => app.get(DependenciesService);
  const runs = () => app.get(RunLifecycle);
  const create = (
    title: string,
    extra: Partial<Parameters<RequirementsService['create']>[0]> = {},
  ): Promise<RequirementResponseDto> =>
    requirements().create({ createdBy: 'human', provider: 'codex', title, ...extra }, HUMAN_ACTOR);
  const waitsFor = (id: string, ...targets: string[]) =>
    dependencies().set(
      id,
      { dependsOn: targets.map((requirementId) => ({ requirementId, until: 'done' as const })) },
      HUMAN_ACTOR,
    );
  const stored = (id: string) =>
    rows(
      workspace,
      'SELECT depends_on_requirement_id AS target, state FROM requirement_dependency WHERE requirement_id = ? ORDER BY target',
      [id],
    );
  /** Started, stopped, then confirmed by a person: done. */
  const confirmDone = async (id: string) => {
    await runs().start(id, { message: 'do it' }, HUMAN_ACTOR);
    await runs().interrupt(id, 'stop', HUMAN_ACTOR);
    await until('the stop', async () => (await requirements().get(id)).status === 'waiting_confirmation');
    return requirements().confirm(id, HUMAN_ACTOR);
  };
  const systemMessages = (id: string) =>
    rows<{ code: string; body: string }>(
      workspace,
      "SELECT code, body FROM requirement_message WHERE requirement_id = ? AND author = 'system' ORDER BY sequence",
      [id],
    );

  beforeAll(async () => {
    workspace = makeWorkspace(kind);
    app = await openServices(workspace);
  });
  afterAll(async () => {
    await app?.close();
    workspace?.cleanup();
  });

  it('refuses itself, a duplicate, an unknown target and any cycle, direct or not, and stores nothing then', async () => {
    const [a, b, c] = [await create('A'), await create('B'), await create('C')];
    expect(await refusal(waitsFor(a.id, a.id))).toEqual({ code: 'dependency_cycle', kind: 'invalid' });
    expect(await refusal(waitsFor(a.id, b.id, b.id))).toEqual({ code: 'dependency_duplicate', kind: 'invalid' });
    expect(await refusal(waitsFor(a.id, 'req_missing'))).toEqual({ code: 'dependency_not_found', kind: 'invalid' });
    await waitsFor(a.id, b.id);
    await waitsFor(b.id, c.id);
    expect(await refusal(waitsFor(b.id, a.id))).toEqual({ code: 'dependency_cycle', kind: 'invalid' });
    expect(await refusal(waitsFor(c.id, a.id))).toEqual({ code: 'dependency_cycle', kind: 'invalid' });
    // The same check at creation: a new Requirement cannot close a loop (nothing depends on it yet), but a refused one is not created.
    expect(await refusal(create('D', { dependsOn: [{ requirementId: 'req_missing', until: 'done' }] }))).toEqual({
      code: 'dependency_not_found',
      kind: 'invalid',
    });
    expect(await rows(workspace, "SELECT id FROM requirement WHERE title = 'D'")).toEqual([]);
    expect(await stored(a.id)).toEqual([{ state: 'pending', target: b.id }]);
    expect(await stored(b.id)).toEqual([{ state: 'pending', target: c.id }]);
    expect(await stored(c.id)).toEqual([]);
    // Replacing the list drops what is no longer named; a closed Requirement takes no list.
    await dependencies().set(b.id, { dependsOn: [] }, HUMAN_ACTOR);
    expect(await stored(b.id)).toEqual([]);
    await requirements().cancel(c.id, HUMAN_ACTOR);
    expect(await refusal(waitsFor(c.id, a.id))).toEqual({ code: 'requirement_closed', kind: 'conflict' });
  });

  it('blocks a start until every dependency is done; the confirmation meets it and tells the dependent, without starting it', async () => {
    const blocker = await create('Blocker');
    const dependent = await create('Dependent', { dependsOn: [{ requirementId: blocker.id, until: 'done' }] });
    expect(dependent.dependsOn).toEqual([
      expect.objectContaining({ requirementId: blocker.id, state: 'pending', until: 'done' }),
    ]);
    expect(await refusal(runs().start(dependent.id, { message: 'now' }, HUMAN_ACTOR))).toEqual({
      code: 'dependency_unmet',
      kind: 'conflict',
    });
    expect(
      await rows(workspace, 'SELECT id FROM requirement_message WHERE requirement_id = ?', [dependent.id]),
    ).toEqual([]); // the refused start wrote nothing

    await confirmDone(blocker.id);
    expect((await requirements().get(dependent.id)).dependsOn).toEqual([
      expect.objectContaining({ reason: 'confirmed done', state: 'met' }),
    ]);
    const told = await until('the dependent to be told', async () => {
      const messages = await systemMessages(dependent.id);
      return messages.length > 0 && messages;
    });
    expect(told).toEqual([{ body: expect.stringContaining('Dependency met: "Blocker"'), code: 'dependency.met' }]);
    // Never started and no autoStart: told, not started; a person's start is allowed now.
    expect(await requirements().get(dependent.id)).toMatchObject({
      session: { pendingMessageCount: 1, state: 'idle' },
      status: 'todo',
    });
    const started = await runs().start(dependent.id, {}, HUMAN_ACTOR);
    expect(started.run).toMatchObject({ inputFromSequence: 1, inputToSequence: 1 });
    await runs().cancel(dependent.id, HUMAN_ACTOR);
  });

  it('starts a dependent that asked for autoStart once its last dependency is met', async () => {
    const [first, second] = [await create('First'), await create('Second')];
    const dependent = await create('Waits for both', {
      autoStart: true,
      dependsOn: [
        { requirementId: first.id, until: 'done' },
        { requirementId: second.id, until: 'done' },
      ],
    });
    await confirmDone(first.id);
    await until('the first to be told', async () => (await systemMessages(dependent.id)).length === 1);
    expect((await requirements().get(dependent.id)).status).toBe('todo'); // one still pending
    await confirmDone(second.id);
    const running = await until('the dependent to start', async () => {
      const now = await requirements().get(dependent.id);
      return now.status === 'doing' && now;
    });
    expect(running.session.state).toBe('running');
    await runs().cancel(dependent.id, HUMAN_ACTOR);
  });

  it('meets an `until: merged` dependency when the last of its PRs merges, and cancels one whose target is withdrawn', async () => {
    const target = await create('Ships a PR');
    const withdrawn = await create('Never done');
    const dependent = await create('After the merge', {
      dependsOn: [
        { requirementId: target.id, until: 'merged' },
        { requirementId: withdrawn.id, until: 'done' },
      ],
    });
    const pullRequests = app.get(PullRequestsService);
    const pr = await pullRequests.register(
      {
        baseBranch: 'main',
        headBranch: 'f',
        headSha: 'abc1234',
        number: 7,
        repository: 'Org/Repo',
        requirementId: target.id,
        status: 'open',
        title: 'PR',
        url: 'https://github.com/Org/Repo/pull/7',
      },
      { kind: 'owner' },
      HUMAN_ACTOR,
    );
    const state = { baseBranch: 'main', headBranch: 'f', headSha: 'abc1234', title: 'PR', url: pr.url };
    await app
      .get(Database)
      .write((tx) => pullRequests.applyGitHubState(tx, pr.id, { ...state, status: 'closed' }, SYSTEM_ACTOR));
    expect(
      (await requirements().get(dependent.id)).dependsOn?.find((d) => d.requirementId === target.id),
    ).toMatchObject({ state: 'pending' });
    await app
      .get(Database)
      .write((tx) => pullRequests.applyGitHubState(tx, pr.id, { ...state, status: 'merged' }, SYSTEM_ACTOR));
    expect(
      (await requirements().get(dependent.id)).dependsOn?.find((d) => d.requirementId === target.id),
    ).toMatchObject({
      reason: 'Org/Repo#7 merged as abc1234',
      state: 'met',
    });

    await requirements().cancel(withdrawn.id, HUMAN_ACTOR);
    expect(
      (await requirements().get(dependent.id)).dependsOn?.find((d) => d.requirementId === withdrawn.id),
    ).toMatchObject({ reason: 'cancelled', state: 'cancelled' });
    const told = await until('both to be told', async () => {
      const messages = await systemMessages(dependent.id);
      return messages.length === 2 && messages;
    });
    expect(told.map((m) => m.code)).toEqual(['dependency.met', 'dependency.cancelled']);
    // A cancelled dependency never wakes it, nor does a met one while another was cancelled.
    expect((await requirements().get(dependent.id)).status).toBe('todo');
  });

  it('takes a dependency that is already met as met, with nothing to tell', async () => {
    const done = await create('Already done');
    await confirmDone(done.id);
    const dependent = await create('Late dependent');
    const set = await waitsFor(dependent.id, done.id);
    expect(set.dependsOn).toEqual([expect.objectContaining({ reason: 'confirmed done', state: 'met' })]);
    expect(
      await rows(
        workspace,
        'SELECT notified_at IS NOT NULL AS told FROM requirement_dependency WHERE requirement_id = ?',
        [dependent.id],
      ),
    ).toEqual([{ told: kind === 'postgres' ? true : 1 }]);
    // Only a person's message: no system message about the dependency.
    await app
      .get(Database)
      .write(async (tx) =>
        app
          .get(MessagesService)
          .appendHuman(tx, await requirements().loadForWrite(tx, dependent.id), { message: 'hello' }, HUMAN_ACTOR),
      );
    expect(await systemMessages(dependent.id)).toEqual([]);
  });
});
