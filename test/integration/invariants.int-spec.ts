import * as path from 'node:path';

import type { INestApplicationContext } from '@nestjs/common';

import type { ManagerEvent } from '@libs/contracts';

import { Database } from '@server/core/database/database.service';
import { EventBus } from '@server/core/event-bus';
import { HUMAN_ACTOR, SYSTEM_ACTOR } from '@server/events/event-log.service';
import { MessagesService } from '@server/messages/messages.service';
import { PullRequestsService } from '@server/pull-requests/pull-requests.service';
import type { RequirementResponseDto } from '@server/requirements/dto/requirement-response.dto';
import { RequirementsRepository } from '@server/requirements/requirements.repository';
import { RequirementsService } from '@server/requirements/requirements.service';
import { AgentRunEntity } from '@server/runs/agent-run.entity';
import { ConversationDelivery } from '@server/conversation/conversation-delivery.service';
import { RunLifecycle } from '@server/runs/run-lifecycle.service';
import { TriggerDeliveryService } from '@server/triggers/trigger-delivery.service';

import { until } from '../support/wait';
import { Workspace, describeStores, makeWorkspace, openServices, rows } from './harness';

const SCRIPTED_AGENT = path.join(__dirname, '..', 'fixtures', 'agents', 'scripted-agent.js');

jest.setTimeout(60_000);

/** A unique index refusing a row: SQLite and PostgreSQL word it differently. */
const UNIQUE_VIOLATION = /UNIQUE constraint failed|duplicate key value violates unique constraint/;

/**
 * The invariants of docs/architecture.md#invariants, proven on the services and the write path directly (no HTTP): each test
 * states the invariant it checks. The end-to-end suites prove the same through the API.
 */
describeStores(
  'domain invariants, at the service level',
  (kind) => {
    let workspace: Workspace;
    let app: INestApplicationContext;
    /** A text field of a JSON payload column, in the store's own SQL. */
    const jsonField = (column: string, ...keys: string[]) =>
      kind === 'postgres'
        ? `(${column}::json${keys
            .slice(0, -1)
            .map((k) => `->'${k}'`)
            .join('')}->>'${keys[keys.length - 1]}')`
        : `json_extract(${column}, '$.${keys.join('.')}')`;

    const requirements = () => app.get(RequirementsService);
    const create = (title = 'invariant'): Promise<RequirementResponseDto> =>
      requirements().create({ createdBy: 'human', provider: 'codex', title }, HUMAN_ACTOR);
    const appendHuman = (requirementId: string, body: string) =>
      app.get(Database).write(async (tx) => {
        const held = await requirements().loadForWrite(tx, requirementId);
        return (
          await app.get(MessagesService).append(tx, held, { author: 'human', body, deliverToRd: true }, HUMAN_ACTOR)
        ).message;
      });

    beforeEach(async () => {
      workspace = makeWorkspace(kind);
      app = await openServices(workspace);
    });
    afterEach(async () => {
      await app.close();
      workspace.cleanup();
    });

    it('1. a Requirement owns exactly one RD session from the moment it is created (one transaction)', async () => {
      const created = await Promise.all(Array.from({ length: 20 }, (_, i) => create(`r${i}`)));
      const counts = await rows<{ id: string; sessions: number }>(
        workspace,
        'SELECT r.id AS id, (SELECT COUNT(*) FROM agent_session s WHERE s.requirement_id = r.id) AS sessions FROM requirement r',
      );
      expect(counts).toHaveLength(20);
      expect(counts.every((c) => c.sessions === 1)).toBe(true);
      expect(new Set(created.map((r) => r.session.id)).size).toBe(20);
    });

    it('2. at most one running RD run per session, enforced by the database itself', async () => {
      const requirement = await create();
      const run = (id: string) =>
        app.get(Database).write(async (tx) => {
          tx.execute(
            `INSERT INTO agent_run (id, requirement_id, session_id, role, provider, status, input_from_sequence, input_to_sequence, started_at, updated_at, trace_count)
           VALUES (?, ?, ?, 'rd', 'codex', 'running', 1, 0, 'now', 'now', 0)`,
            [id, requirement.id, requirement.session.id],
          );
          await tx.reads(); // sends the statement: the unique index answers now
        });
      await expect(run('run_first')).resolves.toBeUndefined();
      await expect(run('run_second')).rejects.toThrow(UNIQUE_VIOLATION);
      expect(await app.get(Database).read(AgentRunEntity).countBy({ sessionId: requirement.session.id })).toBe(1);
    });

    it('3. sequences are unique and gap-free per Requirement, in commit order, under 100 concurrent appends', async () => {
      const [a, b] = await Promise.all([create('a'), create('b')]);
      const written = await Promise.all(
        Array.from({ length: 100 }, (_, i) => appendHuman(i % 2 === 0 ? a.id : b.id, `m${i}`)),
      );
      for (const requirement of [a, b]) {
        const stored = await rows<{ sequence: number; event: number }>(
          workspace,
          `SELECT m.sequence AS sequence, e.id AS event FROM requirement_message m
           JOIN manager_event e ON e.type = 'message.created' AND ${jsonField('e.payload', 'message', 'id')} = m.id
          WHERE m.requirement_id = ? ORDER BY m.sequence`,
          [requirement.id],
        );
        expect(stored.map((s) => s.sequence)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
        // Commit order: a later sequence was committed with a later event.
        expect([...stored.map((s) => s.event)].sort((x, y) => x - y)).toEqual(stored.map((s) => s.event));
      }
      expect(new Set(written.map((m) => `${m.requirementId}:${m.sequence}`)).size).toBe(100);
    });

    it('4 and 6. a run takes the pending input; only success consumes it, up to its boundary; newer input continues the same session', async () => {
      await app.close();
      app = await openServices(workspace, {
        agentEnvironmentPass: ['SCRIPTED_AGENT_DELAY_MS'],
        claudeExecutable: SCRIPTED_AGENT,
        codexExecutable: SCRIPTED_AGENT,
      });
      process.env.SCRIPTED_AGENT_DELAY_MS = '1500'; // long enough to append during a run
      try {
        const lifecycle = app.get(RunLifecycle);
        const delivery = app.get(ConversationDelivery);
        const runsOf = (id: string) =>
          app
            .get(Database)
            .read(AgentRunEntity)
            .find({ order: { startedAt: 'ASC' }, where: { requirementId: id } });
        const requirement = await create();
        await appendHuman(requirement.id, 'mode:hang');
        // A run that does not succeed consumes nothing (here: stopped while it hangs).
        const hanging = await lifecycle.start(requirement.id, {}, HUMAN_ACTOR);
        expect(hanging.run).toMatchObject({ inputFromSequence: 1, inputToSequence: 1 });
        await lifecycle.interrupt(requirement.id, 'stop', HUMAN_ACTOR);
        await until(
          'the stopped run to end',
          async () => (await requirements().get(requirement.id)).session.state !== 'running',
        );
        expect((await requirements().get(requirement.id)).session).toMatchObject({
          lastConsumedMessageSequence: 0,
          pendingMessageCount: 1,
        });
        // The next run takes the interrupted input and the new one; a message during it waits.
        const second = await lifecycle.start(requirement.id, { message: 'mode:normal' }, HUMAN_ACTOR);
        expect(second.run).toMatchObject({ inputFromSequence: 1, inputToSequence: 2 });
        const during = await delivery.reply(
          requirement.id,
          { message: 'mode:normal, and one more thing' },
          HUMAN_ACTOR,
        );
        expect(during.queued).toBe(true);
        // Success consumes exactly its boundary (2), and the same session goes on with 3.
        const all = await until('the continuation to succeed', async () => {
          const runs = await runsOf(requirement.id);
          return runs.length === 3 && runs.every((r) => r.status !== 'running') && runs;
        });
        expect(all.map((r) => [r.status, r.inputFromSequence, r.inputToSequence, r.sessionId])).toEqual([
          ['cancelled', 1, 1, requirement.session.id],
          ['succeeded', 1, 2, requirement.session.id],
          // 3 is the queued reply; 4 is the second run's own answer, inside the range but never delivered (5).
          ['succeeded', 3, 4, requirement.session.id],
        ]);
        const consumedAfterSecond = await rows<{ consumed: number }>(
          workspace,
          `SELECT ${jsonField('payload', 'requirement', 'session', 'lastConsumedMessageSequence')} AS consumed FROM manager_event WHERE type = 'run.succeeded' AND run_id = ?`,
          [all[1].id],
        );
        expect(consumedAfterSecond.map((c) => Number(c.consumed))).toEqual([2]);
        expect(await requirements().get(requirement.id)).toMatchObject({
          session: { lastConsumedMessageSequence: 4, pendingMessageCount: 0, state: 'waiting_human' },
          status: 'waiting_confirmation',
        });
      } finally {
        delete process.env.SCRIPTED_AGENT_DELAY_MS;
      }
    });

    it("5. the RD agent's own output is never delivered back to it", async () => {
      const requirement = await create();
      await app.get(Database).write(async (tx) => {
        const held = await requirements().loadForWrite(tx, requirement.id);
        await app
          .get(MessagesService)
          .append(
            tx,
            held,
            { author: 'rd_agent', body: 'my own answer', deliverToRd: false },
            { id: 'run_x', kind: 'agent' },
          );
      });
      await appendHuman(requirement.id, 'from a person');
      expect((await requirements().get(requirement.id)).session.pendingMessageCount).toBe(1);
      const stored = await rows<{ author: string; deliver: unknown }>(
        workspace,
        'SELECT author, deliver_to_rd AS deliver FROM requirement_message ORDER BY sequence',
      );
      expect(stored.map((m) => ({ ...m, deliver: Boolean(m.deliver) }))).toEqual([
        { author: 'rd_agent', deliver: false },
        { author: 'human', deliver: true },
      ]);
    });

    it("7 and 8. one active review per PR, enforced by the database; registration sets a PR's lifecycle once, never again", async () => {
      const requirement = await create();
      const pr = {
        baseBranch: 'main',
        headBranch: 'feature',
        headSha: 'abc1234',
        number: 7,
        repository: 'org/repo',
        requirementId: requirement.id,
        title: 'PR',
        url: 'https://github.com/org/repo/pull/7',
      };
      const registered = await app
        .get(PullRequestsService)
        .register({ ...pr, status: 'open' }, { kind: 'owner' }, HUMAN_ACTOR);
      // A later registration refreshes metadata only: the lifecycle is GitHub's (the reconciler's).
      const again = await app
        .get(PullRequestsService)
        .register({ ...pr, headSha: 'def5678', status: 'merged' }, { kind: 'owner' }, HUMAN_ACTOR);
      expect(again).toMatchObject({ headSha: 'def5678', id: registered.id, status: 'open' });
      const review = (id: string) =>
        app.get(Database).write(async (tx) => {
          tx.execute(
            `INSERT INTO review_request (id, pull_request_id, requirement_id, run_id, provider, target_head_sha, status, requested_by, created_at, updated_at)
           VALUES (?, ?, ?, ?, 'codex', 'def5678', 'running', 'human', 'now', 'now')`,
            [id, registered.id, requirement.id, `run_${id}`],
          );
          await tx.reads();
        });
      await expect(review('rev_first')).resolves.toBeUndefined();
      await expect(review('rev_second')).rejects.toThrow(UNIQUE_VIOLATION);
      // A reviewer never becomes a session: the Requirement still has exactly its one RD session.
      expect(
        await rows(workspace, 'SELECT id FROM agent_session WHERE requirement_id = ?', [requirement.id]),
      ).toHaveLength(1);
    });

    it('9. every state change commits with its event; events are published after commit, in id order', async () => {
      const published: ManagerEvent[] = [];
      const committedAtPublish: boolean[] = [];
      const database = app.get(Database);
      app.get(EventBus).events$.subscribe(({ event }) => {
        published.push(event);
        // At the moment of publishing, a reader on its own connection already sees the event row.
        void database.readManager
          .query<Array<{ n: number | string }>>(
            `SELECT COUNT(*) AS n FROM manager_event WHERE id = ${kind === 'postgres' ? '$1' : '?'}`,
            [event.id],
          )
          .then(([row]) => committedAtPublish.push(Number(row?.n) === 1));
      });
      const requirement = await create();
      await Promise.all(Array.from({ length: 30 }, (_, i) => appendHuman(requirement.id, `m${i}`)));
      await until(
        'every publish checked',
        async () => committedAtPublish.length === published.length && published.length === 31,
      );
      expect(committedAtPublish.every(Boolean)).toBe(true);
      expect(published.map((e) => e.id)).toEqual([...published.map((e) => e.id)].sort((x, y) => x - y));
      const stored = await rows<{ type: string }>(workspace, 'SELECT type FROM manager_event ORDER BY id');
      expect(stored.map((s) => s.type)).toEqual([
        'requirement.created',
        ...Array.from({ length: 30 }, () => 'message.created'),
      ]);
      // A unit that throws leaves neither its row nor its event.
      await expect(
        database.write(async (tx) => {
          const held = await requirements().loadForWrite(tx, requirement.id);
          await app
            .get(MessagesService)
            .append(tx, held, { author: 'human', body: 'half', deliverToRd: true }, HUMAN_ACTOR);
          throw new Error('changed my mind');
        }),
      ).rejects.toThrow('changed my mind');
      expect((await rows(workspace, 'SELECT id FROM manager_event')).length).toBe(31);
      expect((await rows(workspace, 'SELECT id FROM requirement_message')).length).toBe(30);
    });

    it('10. a trigger occurrence is delivered at most once per receipt key, across restarts', async () => {
      const requirement = await create();
      await requirements().cancel(requirement.id, HUMAN_ACTOR); // recorded, not woken: no agent needed
      const occurrence = {
        author: 'system' as const,
        body: 'CI failed',
        metadata: {},
        receiptKey: 'check-1',
        requirementId: requirement.id,
        source: 'github',
        triggerId: 'github.pull-request.ci-failure',
      };
      const first = await Promise.all(
        Array.from({ length: 5 }, () => app.get(TriggerDeliveryService).deliver(occurrence)),
      );
      expect(first.filter((o) => o.status !== 'duplicate')).toHaveLength(1);
      await app.close();
      app = await openServices(workspace);
      expect((await app.get(TriggerDeliveryService).deliver(occurrence)).status).toBe('duplicate');
      expect(await rows(workspace, "SELECT id FROM requirement_message WHERE body = 'CI failed'")).toHaveLength(1);
    });

    it('11. at start no old pid is trusted: runs left running fail, their sessions fail, their Requirements wait', async () => {
      const requirement = await create();
      await app.get(Database).write(async (tx) => {
        const held = await requirements().loadForWrite(tx, requirement.id);
        tx.execute(
          `INSERT INTO agent_run (id, requirement_id, session_id, role, provider, status, input_from_sequence, input_to_sequence, started_at, updated_at, trace_count, process_id)
         VALUES ('run_orphan', ?, ?, 'rd', 'codex', 'running', 1, 0, 'now', 'now', 0, 999999)`,
          [requirement.id, requirement.session.id],
        );
        app.get(RequirementsRepository).changeRequirement(tx, held.requirement, { status: 'doing' });
        app.get(RequirementsRepository).changeSession(tx, held.session, { state: 'running' });
        await app
          .get(MessagesService)
          .append(tx, held, { author: 'system', body: 'marker', deliverToRd: false }, SYSTEM_ACTOR);
      });
      await app.close();
      app = await openServices(workspace); // the crash: nothing of the old process is trusted
      expect(await app.get(Database).read(AgentRunEntity).findOneByOrFail({ id: 'run_orphan' })).toMatchObject({
        status: 'failed',
      });
      expect(await requirements().get(requirement.id)).toMatchObject({
        session: { state: 'failed' },
        status: 'waiting_confirmation',
      });
      const [reconciled] = await rows<{ payload: string }>(
        workspace,
        "SELECT payload FROM manager_event WHERE type = 'manager.reconciled'",
      );
      expect(JSON.parse(reconciled.payload)).toMatchObject({
        failedRunIds: ['run_orphan'],
        requirementIds: [requirement.id],
      });
    });
  },
  // On PostgreSQL every test passes, but about one whole-tier run in two then fails the NEXT spec
  // file of the same worker with "timeout exceeded when trying to connect" (pg-pool, 10 s): an app
  // closed right after a restart (tests 10, 11) seems to leave a pool connect queued. Until that
  // is found, this spec runs on SQLite only; the other specs cover the rules on both stores.
  ['sqlite'],
);
