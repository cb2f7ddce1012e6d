import * as fs from 'node:fs';
import * as path from 'node:path';

import { query } from './support/db-snapshot';
import { ok, upload } from './support/api';
import { startInProcess } from './support/in-process';
import { Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';

// Runs use the silent synthetic agent: a run stays active until it is stopped.
describe('retention of done and cancelled Requirements', () => {
  let sandbox: Sandbox;
  let manager: TestManager;

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startInProcess({ sandbox });
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  const create = async (title: string) =>
    (await ok(manager.api.POST('/api/requirements', { body: { provider: 'codex', title } }))).id;
  const count = async (table: string, id: string) =>
    (
      await query<{ n: number }>(
        path.join(manager.dataDirectory(), 'factory.sqlite'),
        `SELECT COUNT(*) AS n FROM ${table} WHERE requirement_id = ?`,
        [id],
      )
    )[0].n;
  const attachmentFiles = () => fs.readdirSync(path.join(manager.dataDirectory(), 'attachments'));
  /** Chunks of an attachment's bytes in the database. */
  const storedChunks = async (attachmentId: string) =>
    Number(
      (
        await query<{ n: number | string }>(
          path.join(manager.dataDirectory(), 'factory.sqlite'),
          'SELECT COUNT(*) AS n FROM attachment_chunk WHERE attachment_id = ?',
          [attachmentId],
        )
      )[0].n,
    );
  /** A Requirement that ran (and was stopped), was confirmed, and holds an attachment. */
  const doneRequirement = async (title: string) => {
    const id = await create(title);
    const att = (await ok(upload(manager.api, id, 'notes.txt', 'bytes'))).id;
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id } },
      body: { attachmentIds: [att], message: 'work' },
    });
    await manager.api.POST('/api/requirements/{id}/interrupt', { params: { path: { id } }, body: { mode: 'stop' } });
    await until(
      'the stopped run to end',
      async () =>
        (await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }))).status ===
        'waiting_confirmation',
    );
    expect((await manager.api.POST('/api/requirements/{id}/confirm', { params: { path: { id } } })).status).toBe(200);
    return { att, id };
  };

  it('purges cancelled and done Requirements past their retention, with their records and files, and nothing else', async () => {
    const cancelled = await create('withdrawn');
    await manager.api.DELETE('/api/requirements/{id}', { params: { path: { id: cancelled } } });
    const done = await doneRequirement('finished');
    const active = await create('still todo');
    const reopened = await doneRequirement('reopened');
    await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: reopened.id } },
      body: { message: 'one more thing' },
    }); // running again
    expect(attachmentFiles().some((f) => f.startsWith(done.att))).toBe(true);
    expect(await storedChunks(done.att)).toBe(1);
    expect(await count('agent_run', done.id)).toBe(1);
    const events = await connectSse(`${manager.origin}/api/events`);

    // Retention 0 days: everything terminal is due, at once, because the setting changed.
    await manager.api.PATCH('/api/configuration', {
      body: { cancelledRequirementRetentionDays: 0, doneRequirementRetentionDays: 0 },
    });
    await until(
      'the done Requirement to be purged',
      async () =>
        (await manager.api.GET('/api/requirements/{id}', { params: { path: { id: done.id } } })).status === 404,
    );

    expect((await manager.api.GET('/api/requirements/{id}', { params: { path: { id: cancelled } } })).status).toBe(404);
    for (const table of ['agent_session', 'requirement_message', 'message_attachment', 'agent_run', 'manager_event']) {
      expect(await count(table, done.id)).toBe(0);
    }
    expect(await storedChunks(done.att)).toBe(0); // its bytes went with its row, in the same transaction
    await until('its attachment file to go', async () => !attachmentFiles().some((f) => f.startsWith(done.att)));
    // Untouched: a todo Requirement and one that was reopened (its run is active).
    expect((await manager.api.GET('/api/requirements/{id}', { params: { path: { id: active } } })).status).toBe(200);
    expect(
      (await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: reopened.id } } }))).status,
    ).toBe('doing');
    expect(attachmentFiles().some((f) => f.startsWith(reopened.att))).toBe(true);
    expect(await storedChunks(reopened.att)).toBe(1);

    const purged = (await events.waitFor(2)).find((e) => e.event === 'requirements.purged');
    expect(purged?.data.payload.requirementIds).toEqual(expect.arrayContaining([cancelled, done.id]));
    events.close();
  });

  it('keeps terminal Requirements within their retention', async () => {
    await manager.api.PATCH('/api/configuration', {
      body: { cancelledRequirementRetentionDays: 7, doneRequirementRetentionDays: 365 },
    });
    const cancelled = await create('recent');
    await manager.api.DELETE('/api/requirements/{id}', { params: { path: { id: cancelled } } });
    const done = await doneRequirement('due now');
    const events = await connectSse(`${manager.origin}/api/events`);
    try {
      // One pass, on the setting's change, looks at both: the done one is due, the cancelled one
      // (7 days) is not. The purge's event proves the pass ran; it names only what was due.
      await manager.api.PATCH('/api/configuration', { body: { doneRequirementRetentionDays: 0 } });
      const purged = await events.waitUntil(
        (e) => e.event === 'requirements.purged',
        'the purge of the done Requirement',
      );
      expect(purged.data.payload.requirementIds).toEqual([done.id]);
    } finally {
      events.close();
    }
    expect((await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: cancelled } } }))).status).toBe(
      'cancelled',
    );
  });
});
