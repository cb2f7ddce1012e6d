import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';

import { execute, query } from './support/db-snapshot';
import { ok } from './support/api';
import { sendUntyped } from './support/http';
import { startInProcess } from './support/in-process';
import { Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { until } from './support/wait';

type Hit = Schemas['SearchHitDto'];

/** Search through a real manager (in the test's process) and its SQLite file: the index is written with the rows, in their transactions. */
describe('search', () => {
  let sandbox: Sandbox;
  let manager: TestManager;

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startInProcess({ sandbox });
  });

  afterAll(async () => {
    await manager?.stop();
    // After everything the suite wrote and purged, FTS5 finds its index exactly in step with its content.
    await execute(
      path.join(manager.dataDirectory(), 'factory.sqlite'),
      "INSERT INTO search_fts (search_fts) VALUES ('integrity-check')",
    );
    sandbox?.cleanup();
  });

  const create = async (title: string, description = '') =>
    (await ok(manager.api.POST('/api/requirements', { body: { description, provider: 'codex', title } }))).id;
  const reply = (id: string, message: string) =>
    manager.api.POST('/api/requirements/{id}/reply', { params: { path: { id } }, body: { message } });
  const search = async (q: string, page: { cursor?: string; limit?: number } = {}) => {
    const response = await manager.api.GET('/api/search', { params: { query: { q, ...page } } });
    return {
      items: response.data?.items ?? [],
      nextCursor: response.data?.nextCursor ?? null,
      status: response.status,
    };
  };
  const matched = (hit: Hit) => hit.snippet.filter((part) => part.match).map((part) => part.text.toLowerCase());

  it('finds titles, descriptions and messages, all words required, case and accents folded, the last word as a prefix', async () => {
    const a = await create('Report segment merge durations', 'Measure the compaction profile');
    const b = await create('Fix the flaky upload test');
    expect((await reply(b, 'The résumé parser breaks on UTF-16 files')).status).toBeLessThan(300);
    expect((await reply(b, 'Also check the merge of config files')).status).toBeLessThan(300);

    const title = await search('segment');
    expect(title.items).toEqual([
      expect.objectContaining({
        messageId: null,
        requirementId: a,
        requirementTitle: 'Report segment merge durations',
        sequence: null,
      }),
    ]);
    expect(matched(title.items[0])).toEqual(['segment']);

    const description = await search('COMPACTION');
    expect(description.items.map((h) => h.requirementId)).toEqual([a]);

    const message = await search('resume parser');
    expect(message.items).toHaveLength(1);
    expect(message.items[0]).toMatchObject({
      requirementId: b,
      requirementTitle: 'Fix the flaky upload test',
      sequence: 1,
    });
    expect(message.items[0].messageId).toMatch(/^msg_/);
    expect(matched(message.items[0])).toEqual(['résumé', 'parser']);

    // Prefix on the last word only; every word must occur in the same text.
    expect((await search('pars')).items.map((h) => h.sequence)).toEqual([1]);
    expect((await search('pars breaks')).items).toEqual([]);
    // A longer last word is completed to the indexed words it starts, accents and case folded.
    expect((await search('RÉSUM')).items.map((h) => h.sequence)).toEqual([1]);
    expect((await search('utf parse')).items.map((h) => h.sequence)).toEqual([1]);
    expect((await search('parsezzz')).items).toEqual([]);
    expect((await search('résumé merge')).items).toEqual([]);

    // A title match outranks the same word in a message.
    const merge = await search('merge');
    expect(merge.items.map((h) => [h.requirementId, h.sequence])).toEqual([
      [a, null],
      [b, 2],
    ]);
  });

  it('pages through ranked results without repeats, and refuses what is not a search', async () => {
    const id = await create('Paging target');
    for (let i = 0; i < 7; i++) {
      await reply(id, `needle number ${i}`);
    }
    const seen: Hit[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof search>> = await search('needle', {
        cursor: cursor ?? undefined,
        limit: 3,
      });
      expect(page.status).toBe(200);
      seen.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen.map((h) => h.sequence).sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);

    for (const bad of ['', '   ', '"*()', 'a'.repeat(201), Array.from({ length: 13 }, (_, i) => `w${i}`).join(' ')]) {
      const refused = await manager.api.GET('/api/search', { params: { query: { q: bad } } });
      expect(refused.status).toBe(400);
    }
    // Without the required q: untyped on purpose.
    expect((await sendUntyped(manager.origin, 'GET', '/api/search')).status).toBe(400);
    expect((await manager.api.GET('/api/search', { params: { query: { q: 'needle', cursor: 'bogus' } } })).status).toBe(
      400,
    );
    // FTS5 syntax is text here: a column filter or an operator finds the words, never an error.
    expect((await search('title: needle OR NOT')).status).toBe(200);
    expect((await search('NEAR(needle')).status).toBe(200);
  });

  it('indexes only what commits, and forgets purged Requirements', async () => {
    const id = await create('Purge me later');
    // A reply refused by the server (an attachment it never saw) writes nothing, so indexes nothing.
    const refused = await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id } },
      body: { attachmentIds: ['att_00000000000000000000000000'], message: 'ghostword here' },
    });
    expect(refused.status).toBe(400);
    expect((await search('ghostword')).items).toEqual([]);
    // It ran on a message (the silent agent, stopped), then was confirmed: done, with a conversation.
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id } },
      body: { message: 'vanishing text' },
    });
    expect((await search('vanishing')).items).toHaveLength(1);
    await manager.api.POST('/api/requirements/{id}/interrupt', { params: { path: { id } }, body: { mode: 'stop' } });
    await until(
      'the stop',
      async () =>
        (await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }))).status ===
        'waiting_confirmation',
    );
    expect((await manager.api.POST('/api/requirements/{id}/confirm', { params: { path: { id } } })).status).toBe(200);
    await manager.api.PATCH('/api/configuration', { body: { doneRequirementRetentionDays: 0 } });
    await until(
      'the purge',
      async () => (await manager.api.GET('/api/requirements/{id}', { params: { path: { id } } })).status === 404,
    );
    expect((await search('vanishing')).items).toEqual([]);
    expect((await search('purge')).items).toEqual([]);
    const database = path.join(manager.dataDirectory(), 'factory.sqlite');
    expect(await query(database, 'SELECT COUNT(*) AS n FROM search_document WHERE requirement_id = ?', [id])).toEqual([
      { n: 0 },
    ]);
  });
});
