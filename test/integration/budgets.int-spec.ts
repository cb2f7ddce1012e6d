import * as path from 'node:path';

import type { INestApplicationContext } from '@nestjs/common';

import { DomainEvents } from '@server/core/domain-events';
import { DependenciesService } from '@server/dependencies/dependencies.service';
import { HUMAN_ACTOR } from '@server/events/event-log.service';
import type { RequirementResponseDto } from '@server/requirements/dto/requirement-response.dto';
import { RequirementsService } from '@server/requirements/requirements.service';
import { ConversationDelivery } from '@server/conversation/conversation-delivery.service';
import { START_POLICIES } from '@server/requirements/start-policies';
import { RunLifecycle } from '@server/runs/run-lifecycle.service';
import { TriggerDeliveryService } from '@server/triggers/trigger-delivery.service';

import { until } from '../support/wait';
import { Workspace, describeStores, makeWorkspace, openServices, refusal, rows } from './harness';

/** Answers and succeeds at once; its Codex thread's running total is always 10 input and 2 output tokens (12 against a budget). */
const SCRIPTED_AGENT = path.join(__dirname, '..', 'fixtures', 'agents', 'scripted-agent.js');
const AGENT_ACTOR = { id: 'run_other', kind: 'agent' as const };

jest.setTimeout(30_000);

/**
 * Budgets (issue 18 §1) on the services: a run that reaches its Requirement's budget pauses the
 * session, nothing but a person wakes it then, raising the budget resumes it on what is pending,
 * and a budget lowered under what was spent pauses an idle session at once.
 */
describeStores('Budgets', (kind) => {
  let workspace: Workspace;
  let app: INestApplicationContext;

  const requirements = () => app.get(RequirementsService);
  const runsOf = (id: string) =>
    rows<{ status: string; from: number; to: number }>(
      workspace,
      'SELECT status, input_from_sequence AS "from", input_to_sequence AS "to" FROM agent_run WHERE requirement_id = ? ORDER BY started_at',
      [id],
    );
  // Both rows must say the run ended: a snapshot reads the Requirement and then its session, so
  // one taken while the run's end commits can pair the old Requirement with the new session.
  const resting = (id: string) =>
    until('the session to rest', async () => {
      const now = await requirements().get(id);
      return now.session.state !== 'running' && now.status !== 'doing' && now;
    });
  const lastSystemMessage = async (id: string) =>
    (
      await rows<{ code: string; args: string }>(
        workspace,
        "SELECT code, args FROM requirement_message WHERE requirement_id = ? AND author = 'system' ORDER BY sequence DESC",
        [id],
      )
    )[0];

  beforeAll(async () => {
    workspace = makeWorkspace(kind);
    app = await openServices(workspace, { claudeExecutable: SCRIPTED_AGENT, codexExecutable: SCRIPTED_AGENT });
  });
  afterAll(async () => {
    await app?.close();
    workspace?.cleanup();
  });

  let requirement: RequirementResponseDto;

  it('pauses the session when a run reaches the budget; triggers, agents and replies then wait; raising the budget resumes on all of it', async () => {
    requirement = await requirements().create(
      { budget: { maxCostUsd: null, maxTokens: 10 }, createdBy: 'human', provider: 'codex', title: 'capped' },
      HUMAN_ACTOR,
    );
    await app.get(RunLifecycle).start(requirement.id, { message: 'mode:normal' }, HUMAN_ACTOR);
    const reached = await resting(requirement.id);
    expect(reached).toMatchObject({
      budget: { maxTokens: 10 },
      budgetReachedAt: expect.any(String),
      session: { pausedAt: expect.any(String), state: 'waiting_human' },
      status: 'waiting_confirmation',
      usage: { inputTokens: 10, outputTokens: 2 },
    });
    const notice = await lastSystemMessage(requirement.id);
    expect(notice.code).toBe('budget.reached');
    expect(JSON.parse(notice.args)).toMatchObject({ maxTokens: 10, runStopped: false, tokens: 12 });

    // A trigger's wake and a person's reply are recorded and wait; an agent may not start it.
    const trigger = await app.get(TriggerDeliveryService).deliver({
      author: 'system',
      body: 'CI failed',
      metadata: {},
      receiptKey: 'ci-1',
      requirementId: requirement.id,
      source: 'github',
      triggerId: 'github.pull-request.ci-failure',
    });
    expect(trigger.status).toBe('delivered');
    expect(
      (await app.get(ConversationDelivery).reply(requirement.id, { message: 'mode:normal, and the rest' }, HUMAN_ACTOR))
        .queued,
    ).toBe(true);
    expect(
      await refusal(app.get(RunLifecycle).start(requirement.id, { message: 'from an agent' }, AGENT_ACTOR)),
    ).toEqual({ code: 'budget_reached', kind: 'conflict' });
    expect(await runsOf(requirement.id)).toHaveLength(1);
    expect((await requirements().get(requirement.id)).session).toMatchObject({
      pausedAt: expect.any(String),
      pendingMessageCount: 2,
    });

    // "Raising it resumes": one run takes every pending message.
    const raised = await requirements().update(
      requirement.id,
      { budget: { maxCostUsd: null, maxTokens: 100 } },
      HUMAN_ACTOR,
    );
    expect(raised).toMatchObject({
      budgetReachedAt: null,
      session: { pausedAt: null, state: 'running' },
      status: 'doing',
    });
    const resumed = await resting(requirement.id);
    // The resumed Codex thread reports its running total again: only what grew counts (nothing, here).
    expect(resumed).toMatchObject({
      budgetReachedAt: null,
      session: { pausedAt: null, pendingMessageCount: 0 },
      usage: { inputTokens: 10, outputTokens: 2 },
    });
    const all = await runsOf(requirement.id);
    expect(all).toHaveLength(2);
    expect(all[1]).toMatchObject({ status: 'succeeded' });
    // From after the first run's answer through the trigger's message and the reply.
    expect(all[1].from).toBeLessThan(all[1].to);
  });

  it('pauses an idle session at once when its budget is lowered under what was spent, and only unpauses when it is removed with nothing pending', async () => {
    const before = (await runsOf(requirement.id)).length;
    // 12 tokens spent: a limit of 13 still leaves room, 12 is reached.
    const roomy = await requirements().update(
      requirement.id,
      { budget: { maxCostUsd: null, maxTokens: 13 } },
      HUMAN_ACTOR,
    );
    expect(roomy).toMatchObject({ budgetReachedAt: null, session: { pausedAt: null } });
    const lowered = await requirements().update(
      requirement.id,
      { budget: { maxCostUsd: null, maxTokens: 12 } },
      HUMAN_ACTOR,
    );
    expect(lowered).toMatchObject({
      budgetReachedAt: expect.any(String),
      session: { pausedAt: expect.any(String), state: 'waiting_human' },
    });
    expect((await lastSystemMessage(requirement.id)).code).toBe('budget.reached');

    const removed = await requirements().update(requirement.id, { budget: null }, HUMAN_ACTOR);
    expect(removed).toMatchObject({
      budget: null,
      budgetReachedAt: null,
      session: { pausedAt: null, state: 'waiting_human' },
      status: 'waiting_confirmation',
    });
    expect(await runsOf(requirement.id)).toHaveLength(before);
  });

  it('lets a person start a Requirement past its budget (their start is the decision)', async () => {
    const capped = await requirements().create(
      { budget: { maxCostUsd: null, maxTokens: 1 }, createdBy: 'human', provider: 'codex', title: 'tiny' },
      HUMAN_ACTOR,
    );
    await app.get(RunLifecycle).start(capped.id, { message: 'mode:normal' }, HUMAN_ACTOR);
    expect(await resting(capped.id)).toMatchObject({ budgetReachedAt: expect.any(String) });
    const started = await app.get(RunLifecycle).start(capped.id, { message: 'mode:normal once more' }, HUMAN_ACTOR);
    expect(started.requirement).toMatchObject({ budgetReachedAt: null, session: { pausedAt: null, state: 'running' } });
    // It ends paused again: the budget still holds for what comes after.
    expect(await resting(capped.id)).toMatchObject({
      budgetReachedAt: expect.any(String),
      session: { pausedAt: expect.any(String) },
      usage: { inputTokens: 10 },
    });
  });

  it('asks the start policies in their written order: a start refused for a budget and a dependency names the budget', async () => {
    const owners = { budget: 'BudgetsService', dependencies: 'DependenciesService', network: 'NetworkService' };
    expect(app.get(DomainEvents).handlersOf('requirement.starting')).toEqual(
      START_POLICIES.map((policy) => `${owners[policy]}.guardStart`),
    );
    const blocked = await requirements().create(
      { budget: { maxCostUsd: null, maxTokens: 1 }, createdBy: 'human', provider: 'codex', title: 'spent and waiting' },
      HUMAN_ACTOR,
    );
    await app.get(RunLifecycle).start(blocked.id, { message: 'mode:normal' }, HUMAN_ACTOR);
    expect(await resting(blocked.id)).toMatchObject({ budgetReachedAt: expect.any(String) });
    const first = await requirements().create(
      { createdBy: 'human', provider: 'codex', title: 'not done yet' },
      HUMAN_ACTOR,
    );
    await app
      .get(DependenciesService)
      .set(blocked.id, { dependsOn: [{ requirementId: first.id, until: 'done' }] }, HUMAN_ACTOR);
    // Both refuse an agent's start: the budget is asked first.
    expect(await refusal(app.get(RunLifecycle).start(blocked.id, { message: 'from an agent' }, AGENT_ACTOR))).toEqual({
      code: 'budget_reached',
      kind: 'conflict',
    });
    // A person's start passes the budget (their start is the decision); the dependency still holds it.
    expect(await refusal(app.get(RunLifecycle).start(blocked.id, { message: 'mode:normal' }, HUMAN_ACTOR))).toEqual({
      code: 'dependency_unmet',
      kind: 'conflict',
    });
  });
});
