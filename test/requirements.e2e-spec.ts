import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';

import { ok } from './support/api';
import { execute, onPostgres, query, snapshotStore } from './support/db-snapshot';
import { sendUntyped } from './support/http';
import { startInProcess } from './support/in-process';
import { Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { expectRefused as refused } from './support/refusals';

const VALID: Schemas['CreateRequirementDto'] = {
  description: 'Report segment merge, encode, and flush durations',
  provider: 'codex',
  title: 'Add tiered timings',
};

describe('Requirements, sessions and the conversation over HTTP', () => {
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

  const create = (overrides: Partial<Schemas['CreateRequirementDto']> = {}) =>
    ok(manager.api.POST('/api/requirements', { body: { ...VALID, ...overrides } }), 201);

  const expectRefused = (request: Parameters<typeof refused>[1], status: number, code?: string) =>
    refused(manager.dataDirectory(), request, status, code);

  it('answers health and workspace without any state', async () => {
    const health = await manager.api.GET('/api/health');
    expect(health.status).toBe(200);
    expect(health.data).toEqual({
      // Whether the machine allows it is test/faults/agent-isolation.fault-spec.ts's business.
      agentIsolation: expect.objectContaining({ enabled: expect.any(Boolean) }),
      ok: true,
      version: expect.any(String),
      workspaceRoot: fs.realpathSync(sandbox.workspace),
    });
    const { data } = await manager.api.GET('/api/workspace');
    expect(data).toMatchObject({
      attachmentsDirectory: path.join(manager.dataDirectory(), 'attachments'),
      databasePath: onPostgres()
        ? expect.stringMatching(/^postgres:\/\/.* \(schema am_[0-9a-f]{16}\)$/)
        : path.join(manager.dataDirectory(), 'factory.sqlite'),
      root: fs.realpathSync(sandbox.workspace),
    });
    expect(data?.dataDirectory).toBe(manager.dataDirectory());
  });

  it('creates a todo Requirement with its idle RD session in one step', async () => {
    const { data, response } = await manager.api.POST('/api/requirements', {
      body: { ...VALID, model: 'gpt-5.1-codex', provider: 'claude-code', reasoningEffort: 'high' },
    });
    expect(response.status).toBe(201);
    expect(data).toMatchObject({
      completedAt: null,
      createdBy: 'human',
      model: 'gpt-5.1-codex',
      parentRequirementId: null,
      provider: 'claude-code',
      reasoningEffort: 'high',
      sourceSessionId: null,
      status: 'todo',
      title: VALID.title,
    });
    expect(data?.id).toMatch(/^req_[0-9a-f-]{36}$/);
    expect(data?.session).toMatchObject({
      lastConsumedMessageSequence: 0,
      nativeSessionId: null,
      pendingMessageCount: 0,
      provider: 'claude-code',
      requirementId: data?.id,
      state: 'idle',
    });
    expect(data?.session.id).toMatch(/^ses_/);
    // A Codex model for Claude Code is accepted, and the create answer flags it (the GET does not).
    const { warnings, ...created } = data!;
    expect(warnings).toEqual(['unknown_model']);
    const fetched = await manager.api.GET('/api/requirements/{id}', { params: { path: { id: data!.id } } });
    expect(fetched.data).toEqual(created);
    const sessions = await query(
      path.join(manager.dataDirectory(), 'factory.sqlite'),
      'SELECT * FROM agent_session WHERE requirement_id = ?',
      [data!.id],
    );
    expect(sessions).toHaveLength(1);
  });

  it('decodes URL-encoded IDs and answers 404 for unknown or malformed ones', async () => {
    const requirement = await create();
    const encoded = requirement.id.replace('_', '%5F').replace(/-/g, '%2D');
    // Encoded by hand (the typed client would encode it again): untyped on purpose.
    const res = await sendUntyped(manager.origin, 'GET', `/api/requirements/${encoded}`);
    expect(res.status).toBe(200);
    expect(res.json.id).toBe(requirement.id);
    await expectRefused(
      () =>
        manager.api.GET('/api/requirements/{id}', {
          params: { path: { id: 'req_00000000-0000-0000-0000-000000000000' } },
        }),
      404,
      'requirement_not_found',
    );
    // Hand-encoded IDs and an undocumented route: untyped on purpose.
    await expectRefused(() => sendUntyped(manager.origin, 'GET', '/api/requirements/%27%20OR%201%3D1'), 404);
    await expectRefused(() => sendUntyped(manager.origin, 'GET', '/api/requirements/..%2F..%2Fetc'), 404);
    await expectRefused(() => sendUntyped(manager.origin, 'GET', '/api/no-such-route'), 404);
  });

  it.each([
    ['a missing title', { description: 'x', provider: 'codex' }],
    ['an empty title', { ...VALID, title: '' }],
    ['a blank title', { ...VALID, title: '   ' }],
    ['a title over 200 characters', { ...VALID, title: 'x'.repeat(201) }],
    ['a numeric title', { ...VALID, title: 42 }],
    ['an unknown provider', { ...VALID, provider: 'gpt' }],
    ['a missing provider', { description: 'x', title: 't' }],
    ['an unknown reasoning effort', { ...VALID, reasoningEffort: 'extreme' }],
    ['a model with spaces', { ...VALID, model: 'rm -rf /' }],
    ['an extra field', { ...VALID, status: 'done' }],
    ['an id supplied by the client', { ...VALID, id: 'req_mine' }],
    ['a non-string description', { ...VALID, description: { nested: true } }],
    ['a unicode-only oversize description', { ...VALID, description: '漢'.repeat(100_001) }],
  ])('refuses a create with %s (400, nothing written)', async (_name, body) => {
    // Invalid bodies on purpose: untyped.
    await expectRefused(() => sendUntyped(manager.origin, 'POST', '/api/requirements', body), 400);
  });

  it.each([
    ['malformed JSON', '{"title": "x",', 'invalid_json'],
    ['a JSON array', '[1,2,3]', undefined],
    ['a JSON string', '"hello"', 'invalid_json'],
    ['JSON null', 'null', 'invalid_json'],
    ['an empty body', '', undefined],
  ])('refuses %s as a body', async (_name, raw, code) => {
    await expectRefused(
      () => sendUntyped(manager.origin, 'POST', '/api/requirements', raw, { 'Content-Type': 'application/json' }),
      400,
      code,
    );
  });

  it('refuses a JSON body over 1 MB with 400 and writes nothing', async () => {
    const body = JSON.stringify({ ...VALID, description: 'x'.repeat(1024 * 1024 + 10) });
    await expectRefused(
      () => sendUntyped(manager.origin, 'POST', '/api/requirements', body, { 'Content-Type': 'application/json' }),
      400,
      'body_too_large',
    );
  });

  it('pages through Requirements newest first with limit and cursor', async () => {
    const made: string[] = [];
    for (let i = 0; i < 7; i++) {
      made.push((await create({ title: `paging ${i}` })).id);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const { data, response } = await manager.api.GET('/api/requirements', {
        params: { query: { cursor, limit: 3 } },
      });
      expect(response.status).toBe(200);
      expect(data!.items.length).toBeLessThanOrEqual(3);
      seen.push(...data!.items.map((r) => r.id));
      cursor = data!.nextCursor ?? undefined;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    // Newest first: the seven just made lead, in reverse creation order.
    expect(seen.slice(0, 7)).toEqual([...made].reverse());
    const todo = await manager.api.GET('/api/requirements', { params: { query: { limit: 200, status: 'todo' } } });
    expect(todo.data!.items.every((r) => r.status === 'todo')).toBe(true);
    for (const bad of [
      'limit=0',
      'limit=201',
      'limit=abc',
      'limit=1.5',
      'cursor=nonsense',
      'status=finished',
      'extra=1',
    ]) {
      await expectRefused(() => sendUntyped(manager.origin, 'GET', `/api/requirements?${bad}`), 400);
    }
  });

  it('withdraws only a todo Requirement (204), then refuses with 409', async () => {
    const requirement = await create();
    const res = await manager.api.DELETE('/api/requirements/{id}', { params: { path: { id: requirement.id } } });
    expect(res.status).toBe(204);
    const after = await manager.api.GET('/api/requirements/{id}', { params: { path: { id: requirement.id } } });
    expect(after.data?.status).toBe('cancelled');
    await expectRefused(
      () => manager.api.DELETE('/api/requirements/{id}', { params: { path: { id: requirement.id } } }),
      409,
      'requirement_started',
    );
    await expectRefused(
      () =>
        manager.api.DELETE('/api/requirements/{id}', {
          params: { path: { id: 'req_00000000-0000-0000-0000-000000000000' } },
        }),
      404,
    );
  });

  it('confirms only a Requirement waiting for confirmation', async () => {
    const requirement = await create();
    await expectRefused(
      () => manager.api.POST('/api/requirements/{id}/confirm', { params: { path: { id: requirement.id } } }),
      409,
      'requirement_not_waiting_confirmation',
    );
    await expectRefused(
      () =>
        manager.api.POST('/api/requirements/{id}/confirm', {
          params: { path: { id: 'req_00000000-0000-0000-0000-000000000000' } },
        }),
      404,
    );

    // Only a finished run leads to waiting_confirmation (runs arrive later): put it there
    // directly, while no manager runs (the running one is the database's only writer).
    const own = makeSandbox();
    let other = await startInProcess({ sandbox: own });
    const waiting = await ok(other.api.POST('/api/requirements', { body: VALID }));
    await other.stop();
    await setStatus(other.dataDirectory(), waiting.id, 'waiting_confirmation');
    other = await startInProcess({ sandbox: own });
    try {
      const confirmed = await other.api.POST('/api/requirements/{id}/confirm', {
        params: { path: { id: waiting.id } },
      });
      expect(confirmed.response.status).toBe(200);
      expect(confirmed.data).toMatchObject({ id: waiting.id, session: { state: 'completed' }, status: 'done' });
      expect(confirmed.data?.completedAt).not.toBeNull();
      expect(
        (await other.api.POST('/api/requirements/{id}/confirm', { params: { path: { id: waiting.id } } })).status,
      ).toBe(409);
    } finally {
      await other.stop();
      own.cleanup();
    }
  });

  it('appends replies as pending deliverable messages and lists the conversation in order', async () => {
    const requirement = await create();
    const first = await manager.api.POST('/api/requirements/{id}/reply', {
      body: { message: 'Please also cover the flush path.' },
      params: { path: { id: requirement.id } },
    });
    expect(first.response.status).toBe(202);
    expect(first.data).toMatchObject({
      accepted: true,
      action: 'reply',
      message: {
        attachments: [],
        author: 'human',
        body: 'Please also cover the flush path.',
        deliverToRd: true,
        runId: null,
        sequence: 1,
        sourceRequirementId: null,
      },
      // No run was active: this reply started one (the synthetic agent keeps it running).
      queued: false,
      requirement: { id: requirement.id, session: { pendingMessageCount: 1, state: 'running' }, status: 'doing' },
      requirementId: requirement.id,
    });
    // While it runs, later replies wait for the next run.
    expect(
      (
        await ok(
          manager.api.POST('/api/requirements/{id}/reply', {
            params: { path: { id: requirement.id } },
            body: { message: 'second' },
          }),
        )
      ).queued,
    ).toBe(true);
    expect(
      (
        await ok(
          manager.api.POST('/api/requirements/{id}/reply', {
            params: { path: { id: requirement.id } },
            body: { message: 'third' },
          }),
        )
      ).queued,
    ).toBe(true);
    const page1 = await manager.api.GET('/api/requirements/{id}/messages', {
      params: { path: { id: requirement.id }, query: { limit: 2 } },
    });
    expect(page1.data!.items.map((m) => m.sequence)).toEqual([1, 2]);
    const page2 = await manager.api.GET('/api/requirements/{id}/messages', {
      params: { path: { id: requirement.id }, query: { cursor: page1.data!.nextCursor!, limit: 2 } },
    });
    expect(page2.data!.items.map((m) => m.body)).toEqual(['third']);
    expect(page2.data!.nextCursor).toBeNull();
    const fetched = await manager.api.GET('/api/requirements/{id}', { params: { path: { id: requirement.id } } });
    expect(fetched.data?.session.pendingMessageCount).toBe(3);
    const sessions = await manager.api.GET('/api/sessions', { params: { query: { limit: 200 } } });
    expect(sessions.data!.items.find((s) => s.requirementId === requirement.id)?.pendingMessageCount).toBe(3);
  });

  it('refuses bad replies with 4xx and writes nothing', async () => {
    const requirement = await create();
    const url = `/api/requirements/${requirement.id}/reply`;
    const reply = (body: Schemas['ReplyDto']) =>
      manager.api.POST('/api/requirements/{id}/reply', { body, params: { path: { id: requirement.id } } });
    await expectRefused(() => reply({}), 400, 'empty_message');
    await expectRefused(() => reply({ message: '   ' }), 400, 'empty_message');
    // Wrong types and an unknown field: untyped on purpose.
    await expectRefused(() => sendUntyped(manager.origin, 'POST', url, { message: 7 }), 400);
    await expectRefused(() => sendUntyped(manager.origin, 'POST', url, { message: 'x', attachmentIds: 'att_1' }), 400);
    await expectRefused(() => reply({ attachmentIds: ['att_unknown'], message: 'x' }), 400, 'unknown_attachment');
    await expectRefused(() => reply({ attachmentIds: Array<string>(7).fill('att_x'), message: 'x' }), 400);
    await expectRefused(() => reply({ message: 'x'.repeat(100_001) }), 400);
    await expectRefused(() => sendUntyped(manager.origin, 'POST', url, { message: 'x', mode: 'steer' }), 400);
    await expectRefused(
      () =>
        manager.api.POST('/api/requirements/{id}/reply', {
          params: { path: { id: 'req_00000000-0000-0000-0000-000000000000' } },
          body: { message: 'x' },
        }),
      404,
    );
    await manager.api.DELETE('/api/requirements/{id}', { params: { path: { id: requirement.id } } });
    await expectRefused(() => reply({ message: 'too late' }), 409, 'requirement_cancelled');
    await expectRefused(
      () =>
        manager.api.GET('/api/requirements/{id}/messages', {
          params: { path: { id: 'req_00000000-0000-0000-0000-000000000000' } },
        }),
      404,
    );
  });

  it('gives 100 concurrent replies the sequences 1..100 with no gap and no error', async () => {
    const requirement = await create();
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        manager.api.POST('/api/requirements/{id}/reply', {
          params: { path: { id: requirement.id } },
          body: { message: `reply ${i}` },
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(100).fill(202));
    const sequences = results.map((r) => r.data!.message.sequence).sort((a, b) => a - b);
    expect(sequences).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    const page = await manager.api.GET('/api/requirements/{id}/messages', {
      params: { path: { id: requirement.id }, query: { limit: 200 } },
    });
    expect(page.data!.items.map((m) => m.sequence)).toEqual(sequences);
    expect(new Set(page.data!.items.map((m) => m.body)).size).toBe(100);
    const fetched = await manager.api.GET('/api/requirements/{id}', { params: { path: { id: requirement.id } } });
    expect(fetched.data?.session.pendingMessageCount).toBe(100);
  });

  it('loses no row under concurrent creates', async () => {
    const before = await snapshotStore(manager.dataDirectory());
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        manager.api.POST('/api/requirements', { body: { ...VALID, title: `concurrent ${i}` } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(201));
    expect(new Set(results.map((r) => r.data!.id)).size).toBe(50);
    const after = await snapshotStore(manager.dataDirectory());
    expect(after.rows.requirement - before.rows.requirement).toBe(50);
    expect(after.rows.agent_session - before.rows.agent_session).toBe(50);
    expect(after.rows.manager_event - before.rows.manager_event).toBe(50);
  });
});

/** Test setup only: moves a Requirement to a state that later issues' runs would produce. */
async function setStatus(dataDirectory: string, id: string, status: string): Promise<void> {
  if (onPostgres()) {
    await execute(path.join(dataDirectory, 'factory.sqlite'), 'UPDATE requirement SET status = ? WHERE id = ?', [
      status,
      id,
    ]);
    return;
  }
  const sqlite3 = await import('sqlite3');
  await new Promise<void>((resolve, reject) => {
    const db = new sqlite3.Database(path.join(dataDirectory, 'factory.sqlite'));
    db.configure('busyTimeout', 5000);
    db.run('UPDATE requirement SET status = ? WHERE id = ?', [status, id], (err) => {
      db.close();
      if (err) {
        reject(err);
      } else {
        resolve();
      }
    });
  });
}
