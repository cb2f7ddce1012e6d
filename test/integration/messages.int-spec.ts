import { Readable } from 'node:stream';

import type { INestApplicationContext } from '@nestjs/common';

import { AttachmentsService } from '@server/attachments/attachments.service';
import { Database } from '@server/core/database/database.service';
import { HUMAN_ACTOR, SYSTEM_ACTOR } from '@server/events/event-log.service';
import { MessagesService, NewMessage } from '@server/messages/messages.service';
import type { RequirementResponseDto } from '@server/requirements/dto/requirement-response.dto';
import { RequirementsService } from '@server/requirements/requirements.service';

import { Workspace, describeStores, makeWorkspace, openServices, refusal, rows } from './harness';

jest.setTimeout(30_000);

const RD_ACTOR = { id: 'run_rd', kind: 'agent' as const };

/**
 * The conversation on MessagesService: one append path for every author, sequences gap-free per
 * Requirement in commit order, what counts as pending for the RD session, how a conversation is
 * read back, and that a rolled-back unit leaves no message, no event and no used sequence.
 */
describeStores('Messages', (kind) => {
  let workspace: Workspace;
  let app: INestApplicationContext;

  const requirements = () => app.get(RequirementsService);
  const messages = () => app.get(MessagesService);
  const create = (title: string): Promise<RequirementResponseDto> =>
    requirements().create({ createdBy: 'human', provider: 'codex', title }, HUMAN_ACTOR);
  const append = (requirementId: string, input: NewMessage, actor = HUMAN_ACTOR) =>
    app
      .get(Database)
      .write(async (tx) => messages().append(tx, await requirements().loadForWrite(tx, requirementId), input, actor));
  const human = (requirementId: string, body: string) =>
    append(requirementId, { author: 'human', body, deliverToRd: true });

  beforeAll(async () => {
    workspace = makeWorkspace(kind);
    app = await openServices(workspace);
  });
  afterAll(async () => {
    await app?.close();
    workspace?.cleanup();
  });

  it('numbers the messages of each Requirement from 1 without gaps, whoever writes, and counts only what is for the RD agent as pending', async () => {
    const [a, b] = [await create('a'), await create('b')];
    await human(a.id, 'first');
    await append(a.id, { author: 'rd_agent', body: 'my answer', deliverToRd: false, runId: null }, RD_ACTOR);
    await human(b.id, 'elsewhere');
    await append(a.id, { author: 'system', body: 'a notice', code: null, deliverToRd: false }, SYSTEM_ACTOR);
    const last = await human(a.id, 'second');
    expect(last.message).toMatchObject({ author: 'human', body: 'second', deliverToRd: true, sequence: 4 });
    // The snapshot in the answer is the session as this unit left it.
    expect(last.requirement.session).toMatchObject({ lastMessageSequence: 4, pendingMessageCount: 2 });
    expect(
      await rows(
        workspace,
        'SELECT sequence, author FROM requirement_message WHERE requirement_id = ? ORDER BY sequence',
        [a.id],
      ),
    ).toEqual([
      { author: 'human', sequence: 1 },
      { author: 'rd_agent', sequence: 2 },
      { author: 'system', sequence: 3 },
      { author: 'human', sequence: 4 },
    ]);
    expect((await requirements().get(b.id)).session).toMatchObject({ lastMessageSequence: 1, pendingMessageCount: 1 });
    // What a run after sequence 1 would take: the deliverable ones only.
    const deliverable = await messages().deliverableBetween(a.id, 1, 4);
    expect(deliverable.map((m) => m.body)).toEqual(['first', 'second']);
    expect(await app.get(Database).write((tx) => messages().countDeliverableAfter(tx, a.id, 1))).toBe(1);
    // Each message committed with its own message.created event.
    expect(
      await rows(
        workspace,
        "SELECT COUNT(*) AS n FROM manager_event WHERE requirement_id = ? AND type = 'message.created'",
        [a.id],
      ),
    ).toEqual([{ n: 4 }]);
  });

  it('reads a conversation back in ascending sequence, a page at a time, and refuses an unknown Requirement', async () => {
    const requirement = await create('paged');
    for (let i = 1; i <= 5; i++) {
      await human(requirement.id, `m${i}`);
    }
    const first = await messages().list(requirement.id, { limit: 2 });
    expect(first.items.map((m) => m.body)).toEqual(['m1', 'm2']);
    const second = await messages().list(requirement.id, { cursor: first.nextCursor as string, limit: 2 });
    expect(second.items.map((m) => m.body)).toEqual(['m3', 'm4']);
    const rest = await messages().list(requirement.id, { cursor: second.nextCursor as string, limit: 2 });
    expect(rest.items.map((m) => m.body)).toEqual(['m5']);
    expect(rest.nextCursor).toBeNull();
    expect((await messages().list(requirement.id, { afterSequence: 3 })).items.map((m) => m.sequence)).toEqual([4, 5]);
    expect(await refusal(messages().list('req_unknown', {}))).toEqual({
      code: 'requirement_not_found',
      kind: 'not_found',
    });
    expect(await refusal(messages().list(requirement.id, { cursor: 'not-a-cursor' }))).toEqual({
      code: 'invalid_cursor',
      kind: 'invalid',
    });
  });

  it('leaves nothing of a unit that fails: no message, no event, no attachment taken, and the next message gets the same sequence', async () => {
    const requirement = await create('rolled back');
    await human(requirement.id, 'kept');
    const attachment = await app.get(AttachmentsService).upload(
      requirement.id,
      {
        body: Readable.from([Buffer.from('notes')]),
        declaredLength: 5,
        declaredType: 'text/plain',
        fileName: 'notes.txt',
      },
      HUMAN_ACTOR,
    );
    await expect(
      app.get(Database).write(async (tx) => {
        const held = await requirements().loadForWrite(tx, requirement.id);
        await messages().append(
          tx,
          held,
          { attachmentIds: [attachment.id], author: 'human', body: 'lost', deliverToRd: true },
          HUMAN_ACTOR,
        );
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    // An attachment may be given once, to a message of its own Requirement.
    const other = await create('other');
    expect(
      await refusal(
        append(other.id, { attachmentIds: [attachment.id], author: 'human', body: 'not mine', deliverToRd: true }),
      ),
    ).toEqual({
      code: 'unknown_attachment',
      kind: 'invalid',
    });
    const next = await append(requirement.id, {
      attachmentIds: [attachment.id],
      author: 'human',
      body: 'with notes',
      deliverToRd: true,
    });
    expect(next.message).toMatchObject({ attachments: [expect.objectContaining({ id: attachment.id })], sequence: 2 });
    expect(
      await refusal(
        append(requirement.id, { attachmentIds: [attachment.id], author: 'human', body: 'again', deliverToRd: true }),
      ),
    ).toEqual({
      code: 'attachment_already_used',
      kind: 'invalid',
    });
    expect(
      await rows(workspace, 'SELECT body FROM requirement_message WHERE requirement_id = ? ORDER BY sequence', [
        requirement.id,
      ]),
    ).toEqual([{ body: 'kept' }, { body: 'with notes' }]);
    expect(
      await rows(
        workspace,
        "SELECT COUNT(*) AS n FROM manager_event WHERE requirement_id = ? AND type = 'message.created'",
        [requirement.id],
      ),
    ).toEqual([{ n: 2 }]);
    expect((await requirements().get(requirement.id)).session).toMatchObject({
      lastMessageSequence: 2,
      pendingMessageCount: 2,
    });
  });

  it('keeps sequences gap-free and unique under concurrent appends to several Requirements', async () => {
    const [a, b] = [await create('busy a'), await create('busy b')];
    await Promise.all(Array.from({ length: 40 }, (_, i) => human(i % 2 === 0 ? a.id : b.id, `c${i}`)));
    for (const id of [a.id, b.id]) {
      const stored = await rows<{ sequence: number }>(
        workspace,
        'SELECT sequence FROM requirement_message WHERE requirement_id = ? ORDER BY sequence',
        [id],
      );
      expect(stored.map((s) => s.sequence)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect((await requirements().get(id)).session).toMatchObject({
        lastMessageSequence: 20,
        pendingMessageCount: 20,
      });
    }
  });
});
