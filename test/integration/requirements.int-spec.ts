import type { INestApplicationContext } from '@nestjs/common';

import { Database } from '@server/core/database/database.service';
import { HUMAN_ACTOR } from '@server/events/event-log.service';
import type { RequirementResponseDto } from '@server/requirements/dto/requirement-response.dto';
import { RequirementLifecycle } from '@server/requirements/requirement-lifecycle';
import { IllegalTransitionError } from '@server/requirements/requirement-state';
import { RequirementsService } from '@server/requirements/requirements.service';
import { RunLifecycle } from '@server/runs/run-lifecycle.service';

import { until } from '../support/wait';
import { Workspace, describeStores, eventTypes, makeWorkspace, openServices, refusal, rows } from './harness';

jest.setTimeout(30_000);

/**
 * The Requirement's rules, called on RequirementsService, RunLifecycle and RequirementLifecycle
 * directly on a real store: what each human action may do in each status, what it changes, and
 * that a refusal changes nothing. Runs use the silent agent (it runs until it is stopped).
 */
describeStores('Requirements and their lifecycle', (kind) => {
  let workspace: Workspace;
  let app: INestApplicationContext;

  const requirements = () => app.get(RequirementsService);
  const runs = () => app.get(RunLifecycle);
  const create = (
    title = 'a requirement',
    extra: Partial<Parameters<RequirementsService['create']>[0]> = {},
  ): Promise<RequirementResponseDto> =>
    requirements().create(
      { createdBy: 'human', description: 'what to do', provider: 'codex', title, ...extra },
      HUMAN_ACTOR,
    );
  /** Started, then stopped by a person: waiting for confirmation, its session waiting for a human. */
  const stopped = async (title: string): Promise<RequirementResponseDto> => {
    const requirement = await create(title);
    await runs().start(requirement.id, { message: 'go' }, HUMAN_ACTOR);
    await runs().interrupt(requirement.id, 'stop', HUMAN_ACTOR);
    return until('the stopped run to end', async () => {
      const now = await requirements().get(requirement.id);
      return now.status === 'waiting_confirmation' && now;
    });
  };

  beforeAll(async () => {
    workspace = makeWorkspace(kind);
    app = await openServices(workspace);
  });
  afterAll(async () => {
    await app?.close();
    workspace?.cleanup();
  });

  it('creates a todo Requirement with its idle session and one requirement.created event, in one unit', async () => {
    const created = await create('fresh');
    expect(created).toMatchObject({
      createdBy: 'human',
      description: 'what to do',
      provider: 'codex',
      session: { pendingMessageCount: 0, state: 'idle' },
      status: 'todo',
    });
    expect(
      await rows(workspace, 'SELECT id, provider, state FROM agent_session WHERE requirement_id = ?', [created.id]),
    ).toEqual([{ id: created.session.id, provider: 'codex', state: 'idle' }]);
    expect(await eventTypes(workspace, created.id)).toEqual(['requirement.created']);
  });

  it('edits title, description and provider only while todo; the session follows a provider change; a refused edit changes nothing', async () => {
    const requirement = await create('to edit');
    expect(await refusal(requirements().update(requirement.id, {}, HUMAN_ACTOR))).toEqual({
      code: 'nothing_to_update',
      kind: 'invalid',
    });
    const edited = await requirements().update(
      requirement.id,
      { provider: 'claude-code', title: 'edited' },
      HUMAN_ACTOR,
    );
    expect(edited).toMatchObject({ provider: 'claude-code', session: { provider: 'claude-code' }, title: 'edited' });
    expect(
      await rows(workspace, 'SELECT provider FROM agent_session WHERE requirement_id = ?', [requirement.id]),
    ).toEqual([{ provider: 'claude-code' }]);

    const waiting = await stopped('started, then edited');
    const before = await eventTypes(workspace, waiting.id);
    expect(await refusal(requirements().update(waiting.id, { title: 'too late' }, HUMAN_ACTOR))).toEqual({
      code: 'requirement_started',
      kind: 'conflict',
    });
    // The same value is no change: allowed beside a field that may change after the start.
    const model = await requirements().update(waiting.id, { model: 'gpt-5.1', title: waiting.title }, HUMAN_ACTOR);
    expect(model).toMatchObject({ model: 'gpt-5.1', title: waiting.title });
    expect((await eventTypes(workspace, waiting.id)).slice(before.length)).toEqual(['requirement.updated']);

    await requirements().cancel((await create('withdrawn')).id, HUMAN_ACTOR);
    const [withdrawn] = await rows<{ id: string }>(workspace, "SELECT id FROM requirement WHERE title = 'withdrawn'");
    expect(await refusal(requirements().update(withdrawn.id, { model: 'gpt-5.1' }, HUMAN_ACTOR))).toEqual({
      code: 'requirement_closed',
      kind: 'conflict',
    });
    expect(await rows(workspace, 'SELECT model FROM requirement WHERE id = ?', [withdrawn.id])).toEqual([
      { model: null },
    ]);
  });

  it('forks any Requirement into a new todo one with its fields, the body overriding them; the original is untouched', async () => {
    const original = await create('original', { model: 'gpt-5.1', reasoningEffort: 'high' });
    await requirements().cancel(original.id, HUMAN_ACTOR);
    const fork = await requirements().fork(original.id, { title: 'second attempt' }, HUMAN_ACTOR);
    expect(fork).toMatchObject({
      description: 'what to do',
      forkedFromRequirementId: original.id,
      model: 'gpt-5.1',
      provider: 'codex',
      reasoningEffort: 'high',
      session: { state: 'idle' },
      status: 'todo',
      title: 'second attempt',
    });
    expect(fork.session.id).not.toBe(original.session.id);
    expect(await requirements().get(original.id)).toMatchObject({ status: 'cancelled', title: 'original' });
    expect(await refusal(requirements().fork('req_missing', {}, HUMAN_ACTOR))).toEqual({
      code: 'requirement_not_found',
      kind: 'not_found',
    });
  });

  it('withdraws only a todo Requirement; a started one is cancelled through its run, which ends with it', async () => {
    const todo = await create('never started');
    await requirements().cancel(todo.id, HUMAN_ACTOR);
    expect(await requirements().get(todo.id)).toMatchObject({ session: { state: 'idle' }, status: 'cancelled' });
    expect(await eventTypes(workspace, todo.id)).toEqual(['requirement.created', 'requirement.deleted']);
    expect(await refusal(requirements().cancel(todo.id, HUMAN_ACTOR))).toEqual({
      code: 'requirement_started',
      kind: 'conflict',
    });

    const running = await create('running');
    await runs().start(running.id, { message: 'work' }, HUMAN_ACTOR);
    expect(await refusal(requirements().cancel(running.id, HUMAN_ACTOR))).toEqual({
      code: 'requirement_started',
      kind: 'conflict',
    });
    const cancelled = await runs().cancel(running.id, HUMAN_ACTOR);
    // The answer comes once the run is recorded: the session completed with it.
    expect(cancelled).toMatchObject({ session: { state: 'completed' }, status: 'cancelled' });
    expect(await rows(workspace, 'SELECT status FROM agent_run WHERE requirement_id = ?', [running.id])).toEqual([
      { status: 'cancelled' },
    ]);
    expect(await refusal(runs().cancel(running.id, HUMAN_ACTOR))).toEqual({
      code: 'requirement_closed',
      kind: 'conflict',
    });
    expect(await refusal(runs().start(running.id, { message: 'again' }, HUMAN_ACTOR))).toEqual({
      code: 'requirement_closed',
      kind: 'conflict',
    });
  });

  it('starts only with input and never twice at once; a stop pauses and waits for confirmation, which completes it', async () => {
    const requirement = await create('confirm me');
    expect(await refusal(requirements().confirm(requirement.id, HUMAN_ACTOR))).toEqual({
      code: 'requirement_not_waiting_confirmation',
      kind: 'conflict',
    });
    const started = await runs().start(requirement.id, {}, HUMAN_ACTOR); // a first run needs no message: the Requirement is its input
    expect(started.requirement).toMatchObject({ session: { state: 'running' }, status: 'doing' });
    expect(await refusal(runs().start(requirement.id, { message: 'more' }, HUMAN_ACTOR))).toEqual({
      code: 'run_active',
      kind: 'conflict',
    });
    expect(await refusal(requirements().confirm(requirement.id, HUMAN_ACTOR))).toEqual({
      code: 'requirement_not_waiting_confirmation',
      kind: 'conflict',
    });
    await runs().interrupt(requirement.id, 'stop', HUMAN_ACTOR);
    const waiting = await until('the stop', async () => {
      const now = await requirements().get(requirement.id);
      return now.status === 'waiting_confirmation' && now;
    });
    expect(waiting.session).toMatchObject({ pausedAt: expect.any(String), state: 'waiting_human' });
    // The stopped run's input was the Requirement itself, not a message: nothing is pending to start on.
    expect(await refusal(runs().start(requirement.id, {}, HUMAN_ACTOR))).toEqual({
      code: 'nothing_to_deliver',
      kind: 'conflict',
    });

    const done = await requirements().confirm(requirement.id, HUMAN_ACTOR);
    expect(done).toMatchObject({
      completedAt: expect.any(String),
      session: { pausedAt: null, state: 'completed' },
      status: 'done',
    });
    expect(await refusal(requirements().confirm(requirement.id, HUMAN_ACTOR))).toEqual({
      code: 'requirement_not_waiting_confirmation',
      kind: 'conflict',
    });
    expect(
      (await eventTypes(workspace, requirement.id)).filter((t) => t.startsWith('requirement.') || t.startsWith('run.')),
    ).toEqual(['requirement.created', 'run.started', 'run.cancelled', 'requirement.completed']);
  });

  it('refuses, in the store, a status change the state machine does not have, and rolls back the whole unit', async () => {
    const requirement = await create('guarded');
    const database = app.get(Database);
    const lifecycle = app.get(RequirementLifecycle);
    // todo → done skips the run and the confirmation: no intent may write it.
    await expect(
      database.write(async (tx) => {
        const held = await requirements().loadForWrite(tx, requirement.id);
        lifecycle.touch(tx, held.requirement, '2030-01-01T00:00:00.000Z');
        lifecycle.confirm(tx, held, '2030-01-01T00:00:00.000Z');
      }),
    ).rejects.toThrow(IllegalTransitionError);
    expect(
      await rows(workspace, 'SELECT status, updated_at AS "updatedAt" FROM requirement WHERE id = ?', [requirement.id]),
    ).toEqual([{ status: 'todo', updatedAt: requirement.updatedAt }]);
    expect(await requirements().get(requirement.id)).toMatchObject({ session: { state: 'idle' }, status: 'todo' });
  });
});
