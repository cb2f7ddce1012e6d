import * as fs from 'node:fs';
import { Readable } from 'node:stream';

import type { INestApplicationContext } from '@nestjs/common';

import { AttachmentsService } from '@server/attachments/attachments.service';
import { HUMAN_ACTOR } from '@server/events/event-log.service';
import type { RequirementResponseDto } from '@server/requirements/dto/requirement-response.dto';
import { RequirementsService } from '@server/requirements/requirements.service';
import { RetentionService } from '@server/retention/retention.service';
import { ConversationDelivery } from '@server/conversation/conversation-delivery.service';
import { RunLifecycle } from '@server/runs/run-lifecycle.service';

import { FakeClock } from '../support/fake-clock';
import { until } from '../support/wait';
import { Workspace, describeStores, makeWorkspace, openServices, rows } from './harness';

jest.setTimeout(30_000);

const DAY = 24 * 60 * 60;

/**
 * Retention on RetentionService with a clock the test moves: a cancelled or done Requirement goes
 * once its retention has passed, with everything it owns (session, conversation, attachments and
 * their files, runs, events); what points at it lets go; nothing else is touched.
 */
describeStores('Retention', (kind) => {
  let workspace: Workspace;
  let app: INestApplicationContext;
  const clock = new FakeClock();

  const requirements = () => app.get(RequirementsService);
  const runs = () => app.get(RunLifecycle);
  const create = (
    title: string,
    extra: Partial<Parameters<RequirementsService['create']>[0]> = {},
  ): Promise<RequirementResponseDto> =>
    requirements().create({ createdBy: 'human', provider: 'codex', title, ...extra }, HUMAN_ACTOR);
  const stop = async (id: string) => {
    await runs().interrupt(id, 'stop', HUMAN_ACTOR);
    await until('the stop', async () => (await requirements().get(id)).status === 'waiting_confirmation');
  };
  const owned = async (id: string) => {
    const counts: Record<string, number> = {};
    for (const table of [
      'requirement',
      'agent_session',
      'requirement_message',
      'message_attachment',
      'agent_run',
      'manager_event',
    ]) {
      const column = table === 'requirement' ? 'id' : 'requirement_id';
      counts[table] = (
        await rows<{ n: number }>(workspace, `SELECT COUNT(*) AS n FROM ${table} WHERE ${column} = ?`, [id])
      )[0].n;
    }
    return counts;
  };
  const purged = async () =>
    (
      await rows<{ payload: string }>(
        workspace,
        "SELECT payload FROM manager_event WHERE type = 'requirements.purged' ORDER BY id",
      )
    ).map((e) => (JSON.parse(e.payload) as { requirementIds: string[] }).requirementIds);

  beforeAll(async () => {
    workspace = makeWorkspace(kind);
    app = await openServices(
      workspace,
      { cancelledRequirementRetentionDays: 7, doneRequirementRetentionDays: 30 },
      { clock },
    );
  });
  afterAll(async () => {
    await app?.close();
    workspace?.cleanup();
  });

  it('purges cancelled Requirements after their retention and done ones after theirs, with all they own, and nothing else', async () => {
    const withdrawn = await create('withdrawn');
    await requirements().cancel(withdrawn.id, HUMAN_ACTOR);

    // Done, with a conversation, a run, an attachment file, a child it proposed and a dependent.
    const done = await create('done');
    const attachment = await app.get(AttachmentsService).upload(
      done.id,
      {
        body: Readable.from([Buffer.from('notes')]),
        declaredLength: 5,
        declaredType: 'text/plain',
        fileName: 'notes.txt',
      },
      HUMAN_ACTOR,
    );
    const file = app.get(AttachmentsService).filePath(attachment);
    await runs().start(done.id, { attachmentIds: [attachment.id], message: 'work' }, HUMAN_ACTOR);
    await stop(done.id);
    await requirements().confirm(done.id, HUMAN_ACTOR);
    const child = await create('proposed below', { createdBy: 'rd_agent', parentRequirementId: done.id });
    const dependent = await create('waits for it', { dependsOn: [{ requirementId: done.id, until: 'done' }] });
    // Done too, then reopened by a reply: active again, so never due.
    const reopened = await create('reopened');
    await runs().start(reopened.id, { message: 'work' }, HUMAN_ACTOR);
    await stop(reopened.id);
    await requirements().confirm(reopened.id, HUMAN_ACTOR);
    const todo = await create('todo');
    expect(fs.existsSync(file)).toBe(true);
    const before = await owned(done.id);
    expect(before).toMatchObject({ agent_run: 1, agent_session: 1, message_attachment: 1, requirement: 1 });
    const chunks = async () =>
      Number(
        (
          await rows<{ n: number | string }>(
            workspace,
            'SELECT COUNT(*) AS n FROM attachment_chunk WHERE attachment_id = ?',
            [attachment.id],
          )
        )[0].n,
      );
    expect(await chunks()).toBe(1);

    expect(await app.get(RetentionService).purge()).toBe(0);
    clock.advance(8 * DAY * 1000);
    expect(await app.get(RetentionService).purge()).toBe(1);
    expect(await purged()).toEqual([[withdrawn.id]]);
    expect(await requirements().find(withdrawn.id)).toBeNull();
    expect(await requirements().get(done.id)).toMatchObject({ status: 'done' });

    clock.advance(23 * DAY * 1000);
    await app.get(ConversationDelivery).reply(reopened.id, { message: 'one more thing' }, HUMAN_ACTOR);
    expect((await requirements().get(reopened.id)).status).toBe('doing');
    expect(await app.get(RetentionService).purge()).toBe(1);
    expect(await purged()).toEqual([[withdrawn.id], [done.id]]);
    expect(await owned(done.id)).toEqual({
      agent_run: 0,
      agent_session: 0,
      manager_event: 0,
      message_attachment: 0,
      requirement: 0,
      requirement_message: 0,
    });
    expect(await chunks()).toBe(0); // the bytes went with the row
    expect(fs.existsSync(file)).toBe(false);
    // What pointed at it lets go: the child stays without a parent, the dependent without the dependency.
    expect(await requirements().get(child.id)).toMatchObject({ parentRequirementId: null, status: 'todo' });
    expect((await requirements().get(dependent.id)).dependsOn).toEqual([]);
    for (const kept of [reopened, todo]) {
      expect(await requirements().find(kept.id)).not.toBeNull();
    }
    await runs().cancel(reopened.id, HUMAN_ACTOR);
  });
});
