import type { Schemas } from '@libs/api-client';
import type { RunningManager } from '@server/manager';

import { apiClient, ok } from './support/api';
import { sendUntyped } from './support/http';
import { createRequirement, initRepository, reply, say, settled, sh, startRun } from './support/git-repo';
import { startWorktreeManager } from './support/in-process';
import { Sandbox, makeSandbox } from './support/manager-process';
import { SseConnection, connectSse } from './support/sse-client';
import { until } from './support/wait';

type Item = Schemas['AttentionItemDto'];

// Issue 47 §1: why a Requirement needs its person, opened and cleared by the real causes — a run
// that asks, work to review, a failed run, a budget, a conflict between two agents, a cancelled
// dependency — through a real in-process server, a real repository and SQLite file, the synthetic
// worktree agent as a real child process, and the SSE stream.

jest.setTimeout(120_000);

describe('needs you (attention)', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  let stream: SseConnection;
  const api = () => apiClient(manager.url);
  const withApi = () => ({ api: api() });
  const items = async (query: { person?: string } = {}): Promise<Item[]> =>
    (await ok(api().GET('/api/attention', { params: { query } }))).items;
  const reasonsOf = async (id: string): Promise<string[]> =>
    (await items()).filter((i) => i.requirementId === id).map((i) => i.reason);
  /** Waits until the Requirement's open reasons are exactly `reasons` (the reaction follows the commit). */
  const reasonsBecome = async (id: string, reasons: string[]) => {
    let seen: string[] = [];
    const want = JSON.stringify([...reasons].sort());
    await until(`${id} needs its person for ${reasons.join(', ') || 'nothing'}`, async () => {
      seen = await reasonsOf(id);
      return JSON.stringify([...seen].sort()) === want ? true : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}; open: ${JSON.stringify(seen)}`);
    });
    return seen;
  };
  const eventFor = (type: string, id: string, reason: string) =>
    stream.waitUntil(
      (e) =>
        e.data.type === type &&
        (e.data.payload.item as Item | undefined)?.requirementId === id &&
        (e.data.payload.item as Item).reason === reason,
      `${type} ${reason} of ${id}`,
    );

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n', 'shared.txt': 'base\n' });
    manager = await startWorktreeManager(sandbox);
    stream = await connectSse(`${manager.url}/api/events`);
  });

  afterAll(async () => {
    stream?.close();
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('a question opens waiting_reply; the reply clears it; work to review opens review_ready; confirming clears it', async () => {
    const { id } = await createRequirement(withApi(), { title: 'Asks first' });
    expect(await reasonsOf(id)).toEqual([]);

    await startRun(withApi(), id, say('I can use SQLite or PostgreSQL.\n\nWhich database should I use?'));
    await settled(withApi(), id, 1);
    const [asked] = await reasonsBecome(id, ['waiting_reply']);
    expect(asked).toBe('waiting_reply');
    const opened = await eventFor('attention.opened', id, 'waiting_reply');
    const item = opened.data.payload.item as Item;
    expect(item).toMatchObject({
      person: { id: expect.stringMatching(/^person_/), name: expect.any(String) },
      reason: 'waiting_reply',
      requirementId: id,
      summary: 'Which database should I use?',
    });
    // The event's Requirement carries it, and so does every read of it.
    expect((opened.data.payload.requirement as Schemas['RequirementResponseDto']).attention).toEqual([item]);
    const read = await ok(api().GET('/api/requirements/{id}', { params: { path: { id } } }));
    expect(read.attention).toEqual([item]);
    const listed = await ok(api().GET('/api/requirements', { params: { query: { limit: 200 } } }));
    expect(listed.items.find((r) => r.id === id)?.attention).toEqual([item]);

    // The reply starts a run: the question is answered. The run commits work: ready for review.
    await reply(withApi(), id, sh('echo pg > db.txt && git add db.txt && git commit -qm db'));
    const cleared = await eventFor('attention.cleared', id, 'waiting_reply');
    expect((cleared.data.payload.item as Item).id).toBe(item.id);
    await settled(withApi(), id, 2);
    await reasonsBecome(id, ['review_ready']);
    const [review] = await items();
    expect(review.summary).toBe('Its work is ready for review: 1 commit(s) ahead.');

    await ok(api().POST('/api/requirements/{id}/confirm', { params: { path: { id } } }));
    await reasonsBecome(id, []);
    await eventFor('attention.cleared', id, 'review_ready');
  });

  it('a failed run opens run_failed until a run starts; an answer with nothing to review asks to confirm it done', async () => {
    const { id } = await createRequirement(withApi(), { title: 'Fails first' });
    await startRun(withApi(), id, sh('echo broken >&2; exit 3'));
    await settled(withApi(), id, 1);
    await reasonsBecome(id, ['run_failed']);
    expect((await items()).find((i) => i.requirementId === id)?.summary).toMatch(/^Its run failed: /);

    await startRun(withApi(), id, `${sh('true')} ${say('Nothing needed changing.')}`);
    await settled(withApi(), id, 2);
    await reasonsBecome(id, ['confirm_done']);
    await eventFor('attention.cleared', id, 'run_failed');
    expect((await items()).find((i) => i.requirementId === id)?.summary).toBe('Nothing needed changing.');
    await ok(api().POST('/api/requirements/{id}/cancel', { params: { path: { id } } }));
    await reasonsBecome(id, []);
  });

  it('a reached budget opens budget_reached; raising it clears it', async () => {
    const { id } = await createRequirement(withApi(), { budget: { maxTokens: 5 }, title: 'Spends' });
    await startRun(withApi(), id, say('Spent it.'));
    await settled(withApi(), id, 1);
    await reasonsBecome(id, ['budget_reached']);
    await ok(
      api().PATCH('/api/requirements/{id}', { body: { budget: { maxTokens: 100_000 } }, params: { path: { id } } }),
    );
    // The budget's pause is lifted: what is left is the run's answer to confirm.
    await reasonsBecome(id, ['confirm_done']);
    await eventFor('attention.cleared', id, 'budget_reached');
    await ok(api().POST('/api/requirements/{id}/cancel', { params: { path: { id } } }));
  });

  it('two agents changing the same lines open conflict on both; cancelling one clears the other', async () => {
    const a = await createRequirement(withApi(), { title: 'Edits shared A' });
    const b = await createRequirement(withApi(), { title: 'Edits shared B' });
    await startRun(withApi(), a.id, sh('echo from-a > shared.txt && git commit -qam a'));
    await startRun(withApi(), b.id, sh('echo from-b > shared.txt && git commit -qam b'));
    await settled(withApi(), a.id, 1);
    await settled(withApi(), b.id, 1);
    await reasonsBecome(a.id, ['conflict', 'review_ready']);
    await reasonsBecome(b.id, ['conflict', 'review_ready']);
    const conflictOfA = (await items()).find((i) => i.requirementId === a.id && i.reason === 'conflict');
    expect(conflictOfA?.summary).toBe('Its work conflicts with “Edits shared B” in shared.txt.');

    await ok(api().POST('/api/requirements/{id}/cancel', { params: { path: { id: b.id } } }));
    await reasonsBecome(b.id, []);
    await reasonsBecome(a.id, ['review_ready']);
    await ok(api().POST('/api/requirements/{id}/cancel', { params: { path: { id: a.id } } }));
  });

  it('a cancelled dependency opens dependency_cancelled on the one that waits for it; removing the dependency clears it', async () => {
    const first = await createRequirement(withApi(), { title: 'Goes first' });
    const then = await createRequirement(withApi(), {
      dependsOn: [{ requirementId: first.id, until: 'done' }],
      title: 'Waits for it',
    });
    await ok(api().POST('/api/requirements/{id}/cancel', { params: { path: { id: first.id } } }));
    await reasonsBecome(then.id, ['dependency_cancelled']);
    // The event's Requirement is whole: a dashboard keeps it (its dependencies included).
    const opened = await eventFor('attention.opened', then.id, 'dependency_cancelled');
    expect((opened.data.payload.requirement as Schemas['RequirementResponseDto']).dependsOn).toEqual([
      expect.objectContaining({ requirementId: first.id, state: 'cancelled' }),
    ]);
    await ok(
      api().PUT('/api/requirements/{id}/dependencies', { body: { dependsOn: [] }, params: { path: { id: then.id } } }),
    );
    await reasonsBecome(then.id, []);
  });

  it('lists oldest first, keeps one person’s with ?person=me, and refuses another shape of person', async () => {
    const { id } = await createRequirement(withApi(), { title: 'Mine' });
    await startRun(withApi(), id, say('Shall I go on?'));
    await settled(withApi(), id, 1);
    await reasonsBecome(id, ['waiting_reply']);
    const all = await items();
    expect(all.map((i) => i.since)).toEqual([...all.map((i) => i.since)].sort());
    const person = all[0].person.id;
    expect(await items({ person: 'me' })).toEqual(all);
    expect(await items({ person })).toEqual(all);
    expect(await items({ person: 'person_000000000000000000000000' })).toEqual([]);
    const bad = await sendUntyped(manager.url, 'GET', '/api/attention?person=everyone');
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('person must be');
  });
});
