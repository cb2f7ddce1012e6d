import type { Schemas } from '@libs/api-client';
import { LocalTokenService } from '@server/auth/local-token.service';
import { RunCredentialsService } from '@server/auth/run-credentials.service';
import { RunningManager, startManager } from '@server/manager';

import { apiClient, ok } from './support/api';
import { query } from './support/db-snapshot';
import { registerToken, sendUntyped } from './support/http';
import { IDLE_AGENT, Sandbox, makeSandbox } from './support/manager-process';
import { expectRefused } from './support/refusals';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';

type Req = Schemas['RequirementResponseDto'];

/**
 * The Agent API for follow-up work, on a real in-process server with a real SQLite file. Run
 * credentials come from the server's own service (as a starting run gets them); agents are
 * the idle synthetic agent, so a started run stays active and queued messages stay queued.
 */
describe('Agent API: follow-up Requirements and related messages', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  let credentials: RunCredentialsService;
  let runs = 0;

  const as = (token: string) => ({ Authorization: `Bearer ${token}` });
  const tokenFor = (r: Req) =>
    credentials.issue({ requirementId: r.id, runId: `run_test_${++runs}`, sessionId: r.session.id });
  /** The typed client with the workspace token, and with a run credential. */
  const api = () => apiClient(manager.url);
  const asRun = (token: string) => apiClient(manager.url, { auth: token });
  const get = (id: string): Promise<Req> => ok(api().GET('/api/requirements/{id}', { params: { path: { id } } }));
  const create = (
    title: string,
    provider: Req['provider'] = 'codex',
    extra: Partial<Schemas['CreateRequirementDto']> = {},
  ): Promise<Req> => ok(api().POST('/api/requirements', { body: { provider, title, ...extra } }));
  const propose = (source: Req, token: string, body: Partial<Schemas['ProposeRequirementDto']> = {}) =>
    asRun(token).POST('/api/agent/requirements', {
      body: { description: 'follow-up work', sourceSessionId: source.session.id, title: 'Follow-up', ...body },
    });
  const act = (
    target: string,
    source: Req,
    token: string,
    action: Schemas['AgentRequirementActionDto']['action'],
    body: Partial<Schemas['AgentRequirementActionDto']> = {},
  ) =>
    asRun(token).POST('/api/agent/requirements/{id}/action', {
      body: { action, sourceRequirementId: source.id, sourceSessionId: source.session.id, ...body },
      params: { path: { id: target } },
    });
  const related = (source: Req, token: string, sessionId: string = source.session.id) =>
    asRun(token).GET('/api/agent/requirements/{id}/related', {
      params: { path: { id: source.id }, query: { sourceSessionId: sessionId } },
    });
  const message = (
    source: Req,
    target: string,
    token: string,
    text = 'Use contract version 2.',
    body: Partial<Schemas['RelatedMessageDto']> = {},
  ) =>
    asRun(token).POST('/api/agent/requirements/{id}/related/{targetId}/messages', {
      body: { message: text, sourceSessionId: source.session.id, ...body },
      params: { path: { id: source.id, targetId: target } },
    });
  /** For bodies the API does not take (an unknown provider or action, a wrong type): untyped on purpose. */
  const sendAs = (token: string, method: string, path: string, body?: object) =>
    sendUntyped(manager.url, method, path, body, as(token));
  const refused = (request: Parameters<typeof expectRefused>[1], status: number, code?: string) =>
    expectRefused(manager.runtime.paths.dataDirectory, request, status, code);
  const conversation = async (id: string) =>
    (await ok(api().GET('/api/requirements/{id}/messages', { params: { path: { id } } }))).items;
  const settledAs = (id: string, status: string) =>
    until(`${id} to be ${status}`, async () => ((await get(id)).status === status ? get(id) : undefined));

  /** A parent with its own run credential, and a child it proposed (todo). */
  const family = async (title = 'parent') => {
    const parent = await create(title, 'claude-code', { model: 'sonnet', reasoningEffort: 'high' });
    const token = tokenFor(parent);
    const child: Req = await ok(propose(parent, token));
    return { child, parent, token };
  };

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startManager({
      env: {
        ...process.env,
        CODE_FACTORY_CLAUDE_EXECUTABLE: IDLE_AGENT,
        CODE_FACTORY_CODEX_EXECUTABLE: IDLE_AGENT,
        CODE_FACTORY_HOME: sandbox.home,
      },
      overrides: { port: 0 },
      workspace: sandbox.workspace,
    });
    registerToken(manager.url, manager.app.get(LocalTokenService).value);
    credentials = manager.app.get(RunCredentialsService);
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  describe('POST /api/agent/requirements (propose)', () => {
    it('creates a todo child of the proposing Requirement that runs like its parent, and publishes it', async () => {
      const parent = await create('parent', 'claude-code', { model: 'sonnet', reasoningEffort: 'high' });
      const token = tokenFor(parent);
      const events = await connectSse(`${manager.url}/api/events`);
      const res = await propose(parent, token, {
        description: 'Track throughput and peak memory',
        title: 'Add a performance benchmark',
      });
      expect(res.status).toBe(201);
      expect(res.data).toMatchObject({
        createdBy: 'rd_agent',
        description: 'Track throughput and peak memory',
        model: 'sonnet',
        parentRequirementId: parent.id,
        provider: 'claude-code',
        reasoningEffort: 'high',
        session: { provider: 'claude-code', state: 'idle' },
        sourceSessionId: parent.session.id,
        status: 'todo',
        title: 'Add a performance benchmark',
      });
      const [created] = await events.waitFor(1);
      expect(created).toMatchObject({
        data: { actor: { kind: 'agent' }, requirementId: res.data!.id, type: 'requirement.created' },
        event: 'requirement.created',
      });
      events.close();
    });

    it("takes its own provider (then not the parent's model) and starts at once with start: true", async () => {
      const parent = await create('parent', 'claude-code', { model: 'sonnet' });
      const res = await propose(parent, tokenFor(parent), { provider: 'codex', start: true });
      expect(res.status).toBe(201);
      expect(res.data).toMatchObject({
        model: null,
        provider: 'codex',
        session: { state: 'running' },
        status: 'doing',
      });
      const listed = await api().GET('/api/runs', { params: { query: { requirementId: res.data!.id } } });
      expect(listed.data!.items).toEqual([expect.objectContaining({ role: 'rd', status: 'running' })]);
    });

    it("refuses a parent other than the run's Requirement (400), a foreign session or credential (403), the owner without a parent (400) and bad fields (400)", async () => {
      const { parent, token } = await family();
      const stranger = await create('stranger');
      await refused(() => propose(parent, token, { parentRequirementId: stranger.id }), 400, 'parent_mismatch');
      await refused(() => propose(parent, token, { sourceSessionId: stranger.session.id }), 403, 'outside_run_scope');
      await refused(() => propose(parent, tokenFor(stranger)), 403, 'outside_run_scope');
      await refused(
        () =>
          api().POST('/api/agent/requirements', {
            body: { description: 'd', sourceSessionId: parent.session.id, title: 'x' },
          }),
        400,
        'parent_required',
      );
      await refused(() => propose(parent, token, { title: '' }), 400);
      await refused(() => propose(parent, token, { title: 'x'.repeat(201) }), 400);
      await refused(
        () =>
          sendAs(token, 'POST', '/api/agent/requirements', {
            sourceSessionId: parent.session.id,
            title: 'Follow-up',
            provider: 'gpt',
          }),
        400,
      );
      await refused(
        () =>
          sendAs(token, 'POST', '/api/agent/requirements', {
            sourceSessionId: parent.session.id,
            title: 'Follow-up',
            start: 'yes',
          }),
        400,
      );
      await refused(
        () =>
          sendAs(token, 'POST', '/api/agent/requirements', {
            sourceSessionId: parent.session.id,
            title: 'Follow-up',
            createdBy: 'human',
          }),
        400,
      );
      await refused(
        () =>
          sendUntyped(manager.url, 'POST', '/api/agent/requirements', '{"title":', {
            ...as(token),
            'Content-Type': 'application/json',
          }),
        400,
      );
    });

    it("lets the owner's token act for the Requirement it names, audited as a person, under the same relationship rules", async () => {
      const parent = await create('owner-driven parent');
      const stranger = await create('owner-driven stranger');
      const owner = {
        description: 'scripted follow-up',
        parentRequirementId: parent.id,
        sourceSessionId: parent.session.id,
        title: 'Scripted',
      };
      const child: Req = await ok(api().POST('/api/agent/requirements', { body: owner }));
      expect(child).toMatchObject({
        createdBy: 'rd_agent',
        parentRequirementId: parent.id,
        sourceSessionId: parent.session.id,
        status: 'todo',
      });
      const [proposed] = await query<{ actor_kind: string }>(
        manager.runtime.databasePath,
        "SELECT actor_kind FROM manager_event WHERE type = 'requirement.created' AND requirement_id = ?",
        [child.id],
      );
      expect(proposed).toEqual({ actor_kind: 'human' });
      // The named session must be the named Requirement's, and the rules still hold.
      await refused(
        () => api().POST('/api/agent/requirements', { body: { ...owner, sourceSessionId: stranger.session.id } }),
        400,
        'session_mismatch',
      );
      const ownerAct = (target: string, source: Req, action: Schemas['AgentRequirementActionDto']['action']) =>
        api().POST('/api/agent/requirements/{id}/action', {
          params: { path: { id: target } },
          body: { action, sourceRequirementId: source.id, sourceSessionId: source.session.id },
        });
      await refused(() => ownerAct(child.id, stranger, 'delete'), 409, 'not_proposed_by_source');
      expect((await ownerAct(child.id, parent, 'delete')).status).toBe(200);
      const familyOf = await api().GET('/api/agent/requirements/{id}/related', {
        params: { path: { id: parent.id }, query: { sourceSessionId: parent.session.id } },
      });
      expect(familyOf.data!.children.map((c: Req) => c.id)).toEqual([child.id]);
      await refused(
        () =>
          api().GET('/api/agent/requirements/{id}/related', {
            params: { path: { id: parent.id }, query: { sourceSessionId: stranger.session.id } },
          }),
        400,
        'session_mismatch',
      );
      await refused(
        () =>
          api().POST('/api/agent/requirements/{id}/related/{targetId}/messages', {
            params: { path: { id: parent.id, targetId: stranger.id } },
            body: { message: 'hi', sourceSessionId: parent.session.id },
          }),
        409,
        'not_related',
      );
    });

    it('refuses a revoked run credential (401)', async () => {
      const parent = await create('parent');
      const token = tokenFor(parent);
      credentials.revoke(`run_test_${runs}`);
      await refused(() => propose(parent, token), 401);
    });
  });

  describe('POST /api/agent/requirements/:id/action', () => {
    it('starts, stops and marks done a child it proposed, through the normal state machine', async () => {
      const { child, parent, token } = await family();
      const started = await act(child.id, parent, token, 'start');
      expect(started.status).toBe(202);
      expect(started.data).toMatchObject({
        accepted: true,
        action: 'start',
        requirement: { id: child.id, status: 'doing' },
        requirementId: child.id,
      });
      expect(started.data!.runId).toMatch(/^run_/);
      await refused(() => act(child.id, parent, token, 'start'), 409, 'run_active');
      await refused(() => act(child.id, parent, token, 'done'), 409, 'requirement_not_waiting_confirmation');
      await refused(() => act(child.id, parent, token, 'delete'), 409, 'requirement_started');

      const stopped = await act(child.id, parent, token, 'stop');
      expect(stopped.status).toBe(202);
      expect(stopped.data).toMatchObject({ action: 'stop', runId: started.data!.runId });
      await settledAs(child.id, 'waiting_confirmation');
      await refused(() => act(child.id, parent, token, 'stop'), 409, 'no_active_run');

      const done = await act(child.id, parent, token, 'done');
      expect(done.status).toBe(200);
      expect(done.data!.requirement).toMatchObject({ session: { state: 'completed' }, status: 'done' });
      expect(done.data!.requirement.completedAt).not.toBeNull();
    });

    it("stop pauses the child like the dashboard's stop: a related message waits, the explicit start delivers it all", async () => {
      const { child, parent, token } = await family();
      await act(child.id, parent, token, 'start');
      expect(await ok(message(parent, child.id, token, 'queued behind the run'))).toMatchObject({ queued: true });
      await act(child.id, parent, token, 'stop');
      const paused = await until('the child paused', async () =>
        (await get(child.id)).session.pausedAt ? get(child.id) : undefined,
      );
      expect(paused).toMatchObject({
        session: { pendingMessageCount: 1, state: 'waiting_human' },
        status: 'waiting_confirmation',
      });

      // Another agent's message is not a person starting it: recorded, queued, no run.
      const later = await message(parent, child.id, token, 'and one more thing');
      expect(later.data).toMatchObject({
        queued: true,
        requirement: { session: { pausedAt: paused.session.pausedAt, pendingMessageCount: 2, state: 'waiting_human' } },
      });
      const runsOf = async () =>
        (await ok(api().GET('/api/runs', { params: { query: { requirementId: child.id } } }))).items;
      expect(await runsOf()).toHaveLength(1);

      const started = await act(child.id, parent, token, 'start');
      expect(started.data!.requirement).toMatchObject({
        session: { pausedAt: null, state: 'running' },
        status: 'doing',
      });
      const [latest] = await runsOf();
      expect(latest).toMatchObject({
        id: started.data!.runId,
        inputFromSequence: 1,
        inputToSequence: 2,
        status: 'running',
      });
    });

    it('deletes a todo child (200, cancelled)', async () => {
      const { child, parent, token } = await family();
      const res = await act(child.id, parent, token, 'delete');
      expect(res.status).toBe(200);
      expect(res.data).toMatchObject({ action: 'delete', requirement: { status: 'cancelled' }, runId: null });
    });

    it("refuses anything but a direct child proposed by the same session: another session's child, a grandchild, a sibling, the parent", async () => {
      const { child, parent, token } = await family();
      const childToken = tokenFor(child);
      const grandchild: Req = await ok(propose(child, childToken));
      const sibling: Req = await ok(propose(parent, token));
      const other = await family('other parent');
      const human = await create("a person's Requirement");
      await refused(() => act(other.child.id, parent, token, 'start'), 409, 'not_proposed_by_source');
      await refused(() => act(grandchild.id, parent, token, 'start'), 409, 'not_proposed_by_source');
      await refused(() => act(sibling.id, child, childToken, 'start'), 409, 'not_proposed_by_source');
      await refused(() => act(parent.id, child, childToken, 'start'), 409, 'not_proposed_by_source');
      await refused(() => act(human.id, parent, token, 'delete'), 409, 'not_proposed_by_source');
      // The credential must be the source's own.
      await refused(() => act(child.id, parent, other.token, 'start'), 403, 'outside_run_scope');
      await refused(
        () => act(child.id, parent, token, 'start', { sourceSessionId: other.parent.session.id }),
        403,
        'outside_run_scope',
      );
      await refused(
        () => act('req_00000000-0000-4000-8000-000000000000', parent, token, 'start'),
        404,
        'requirement_not_found',
      );
      await refused(
        () =>
          sendAs(token, 'POST', `/api/agent/requirements/${child.id}/action`, {
            action: 'archive',
            sourceRequirementId: parent.id,
            sourceSessionId: parent.session.id,
          }),
        400,
      );
      await refused(
        () =>
          sendAs(token, 'POST', `/api/agent/requirements/${child.id}/action`, {
            action: 'start',
            sourceSessionId: parent.session.id,
          }),
        400,
      );
      expect((await get(child.id)).status).toBe('todo');
    });
  });

  describe('GET /api/agent/requirements/:id/related', () => {
    it('answers the direct parent and children, terminal ones included', async () => {
      const { child, parent, token } = await family();
      const second: Req = await ok(propose(parent, token));
      await act(second.id, parent, token, 'delete');
      const childToken = tokenFor(child);
      const grandchild: Req = await ok(propose(child, childToken));

      const fromParent = await related(parent, token);
      expect(fromParent.status).toBe(200);
      expect(fromParent.data!.parent).toBeNull();
      expect(fromParent.data!.children.map((r: Req) => [r.id, r.status])).toEqual([
        [child.id, 'todo'],
        [second.id, 'cancelled'],
      ]);
      const fromChild = await related(child, childToken);
      expect(fromChild.data!.parent).toMatchObject({ id: parent.id, session: { id: parent.session.id } });
      expect(fromChild.data!.children.map((r: Req) => r.id)).toEqual([grandchild.id]);
    });

    it("needs the run's own session (400 without, 403 another)", async () => {
      const { child, parent, token } = await family();
      await refused(() => sendAs(token, 'GET', `/api/agent/requirements/${parent.id}/related`), 400);
      await refused(() => related(parent, token, child.session.id), 403, 'outside_run_scope');
      await refused(() => related(child, token), 403, 'outside_run_scope');
    });
  });

  describe('POST /api/agent/requirements/:id/related/:targetId/messages', () => {
    it("delivers to a child as the sender's agent and starts its idle session", async () => {
      const { child, parent, token } = await family();
      const events = await connectSse(`${manager.url}/api/events`);
      const res = await message(parent, child.id, token, 'Use contract version 2.');
      expect(res.status).toBe(202);
      expect(res.data).toMatchObject({
        accepted: true,
        message: {
          author: 'rd_agent',
          body: 'Use contract version 2.',
          deliverToRd: true,
          requirementId: child.id,
          sourceRequirementId: parent.id,
        },
        queued: false,
        requirement: { id: child.id, session: { state: 'running' }, status: 'doing' },
        sourceRequirementId: parent.id,
        targetRequirementId: child.id,
      });
      const received = await events.waitFor(2);
      expect(received.map((e) => [e.event, e.data.requirementId])).toEqual([
        ['message.created', child.id],
        ['run.started', child.id],
      ]);
      events.close();
      const [stored] = await conversation(child.id);
      expect(stored).toMatchObject({ author: 'rd_agent', sourceRequirementId: parent.id });
    });

    it("queues behind the target's active run, and reaches the parent from a child", async () => {
      const { child, parent, token } = await family();
      await api().POST('/api/requirements/{id}/start', { params: { path: { id: parent.id } }, body: {} });
      const res = await message(child, parent.id, tokenFor(child), 'Blocked on the schema change');
      expect(res.status).toBe(202);
      expect(res.data).toMatchObject({
        queued: true,
        requirement: { session: { pendingMessageCount: 1, state: 'running' } },
      });
      expect((await conversation(parent.id)).map((m: { author: string; body: string }) => [m.author, m.body])).toEqual([
        ['rd_agent', 'Blocked on the schema change'],
      ]);
      // The parent's own run is untouched: the message waits for the next one.
      expect(
        (await ok(api().GET('/api/runs', { params: { query: { requirementId: parent.id } } }))).items,
      ).toHaveLength(1);
      expect((await ok(related(parent, token))).children[0]).toMatchObject({ id: child.id, status: 'todo' });
    });

    it('reopens a done target in its original session', async () => {
      const { child, parent, token } = await family();
      await act(child.id, parent, token, 'start');
      await act(child.id, parent, token, 'stop');
      await settledAs(child.id, 'waiting_confirmation');
      await act(child.id, parent, token, 'done');
      const res = await message(parent, child.id, token, 'One more thing');
      expect(res.status).toBe(202);
      expect(res.data!.requirement).toMatchObject({
        completedAt: null,
        session: { id: child.session.id, state: 'running' },
        status: 'doing',
      });
    });

    it('refuses an unrelated target (sibling, grandchild, stranger, itself), a cancelled one, a foreign credential and bad bodies', async () => {
      const { child, parent, token } = await family();
      const childToken = tokenFor(child);
      const sibling: Req = await ok(propose(parent, token));
      const grandchild: Req = await ok(propose(child, childToken));
      const stranger = await create('stranger');
      const cancelled: Req = await ok(propose(parent, token));
      await act(cancelled.id, parent, token, 'delete');
      await refused(() => message(child, sibling.id, childToken), 409, 'not_related');
      await refused(() => message(parent, grandchild.id, token), 409, 'not_related');
      await refused(() => message(parent, stranger.id, token), 409, 'not_related');
      await refused(() => message(parent, parent.id, token), 409, 'not_related');
      await refused(() => message(parent, cancelled.id, token), 409, 'requirement_cancelled');
      await refused(
        () => message(parent, 'req_00000000-0000-4000-8000-000000000000', token),
        404,
        'requirement_not_found',
      );
      await refused(() => message(parent, child.id, childToken), 403, 'outside_run_scope');
      await refused(
        () => message(parent, child.id, token, 'x', { sourceSessionId: child.session.id }),
        403,
        'outside_run_scope',
      );
      await refused(() => message(parent, child.id, token, '   '), 400);
      await refused(() => message(parent, child.id, token, 'x'.repeat(100_001)), 400);
      await refused(
        () =>
          sendAs(token, 'POST', `/api/agent/requirements/${parent.id}/related/${child.id}/messages`, {
            author: 'human',
            message: 'x',
            sourceSessionId: parent.session.id,
          }),
        400,
      );
    });
  });

  it('keeps every proposal consistent under concurrent calls', async () => {
    const parent = await create('busy parent');
    const token = tokenFor(parent);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => propose(parent, token, { start: i % 2 === 0, title: `child ${i}` })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
    const dbPath = `${manager.runtime.paths.dataDirectory}/factory.sqlite`;
    const [row] = await query<{ n: number; running: number }>(
      dbPath,
      "SELECT COUNT(*) AS n, SUM(CASE WHEN status = 'running' THEN 1 ELSE 0 END) AS running FROM agent_run WHERE requirement_id IN (SELECT id FROM requirement WHERE parent_requirement_id = ?)",
      [parent.id],
    );
    expect(row).toEqual({ n: 10, running: 10 });
  });
});
