import { LocalTokenService } from '@server/auth/local-token.service';
import { RunCredentialsService } from '@server/auth/run-credentials.service';
import { RunningManager, startManager } from '@server/manager';

import { query } from './support/db-snapshot';
import { type Json, registerToken, send } from './support/http';
import { IDLE_AGENT, Sandbox, makeSandbox } from './support/manager-process';
import { expectRefused } from './support/refusals';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';

interface Req {
  id: string;
  status: string;
  session: { id: string; state: string; provider: string; pausedAt: string | null };
  parentRequirementId: string | null;
  sourceSessionId: string | null;
  [key: string]: unknown;
}

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
  const tokenFor = (r: Req) => credentials.issue({ requirementId: r.id, runId: `run_test_${++runs}`, sessionId: r.session.id });
  const get = async (id: string): Promise<Req> => (await send(manager.url, 'GET', `/api/requirements/${id}`)).json;
  const create = async (title: string, provider = 'codex', extra: object = {}): Promise<Req> =>
    (await send(manager.url, 'POST', '/api/requirements', { provider, title, ...extra })).json;
  const propose = (source: Req, token: string, body: object = {}) =>
    send(manager.url, 'POST', '/api/agent/requirements', { description: 'follow-up work', sourceSessionId: source.session.id, title: 'Follow-up', ...body }, as(token));
  const act = (target: string, source: Req, token: string, action: string, body: object = {}) =>
    send(manager.url, 'POST', `/api/agent/requirements/${target}/action`, { action, sourceRequirementId: source.id, sourceSessionId: source.session.id, ...body }, as(token));
  const related = (source: Req, token: string, sessionId: string | null = source.session.id) =>
    send(manager.url, 'GET', `/api/agent/requirements/${source.id}/related${sessionId === null ? '' : `?sourceSessionId=${sessionId}`}`, undefined, as(token));
  const message = (source: Req, target: string, token: string, text = 'Use contract version 2.', body: object = {}) =>
    send(manager.url, 'POST', `/api/agent/requirements/${source.id}/related/${target}/messages`, { message: text, sourceSessionId: source.session.id, ...body }, as(token));
  const refused = (request: () => Promise<{ status: number; json?: Json }>, status: number, code?: string) =>
    expectRefused(manager.runtime.paths.dataDirectory, request, status, code);
  const conversation = async (id: string) => (await send(manager.url, 'GET', `/api/requirements/${id}/messages`)).json.items;
  const settledAs = (id: string, status: string) => until(`${id} to be ${status}`, async () => ((await get(id)).status === status ? get(id) : undefined));

  /** A parent with its own run credential, and a child it proposed (todo). */
  const family = async (title = 'parent') => {
    const parent = await create(title, 'claude-code', { model: 'sonnet', reasoningEffort: 'high' });
    const token = tokenFor(parent);
    const child: Req = (await propose(parent, token)).json;
    return { child, parent, token };
  };

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startManager({
      env: { ...process.env, CODE_FACTORY_CLAUDE_EXECUTABLE: IDLE_AGENT, CODE_FACTORY_CODEX_EXECUTABLE: IDLE_AGENT, CODE_FACTORY_HOME: sandbox.home },
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
      const res = await propose(parent, token, { description: 'Track throughput and peak memory', title: 'Add a performance benchmark' });
      expect(res.status).toBe(201);
      expect(res.json).toMatchObject({
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
      expect(created).toMatchObject({ data: { actor: { kind: 'agent' }, requirementId: res.json.id, type: 'requirement.created' }, event: 'requirement.created' });
      events.close();
    });

    it("takes its own provider (then not the parent's model) and starts at once with start: true", async () => {
      const parent = await create('parent', 'claude-code', { model: 'sonnet' });
      const res = await propose(parent, tokenFor(parent), { provider: 'codex', start: true });
      expect(res.status).toBe(201);
      expect(res.json).toMatchObject({ model: null, provider: 'codex', session: { state: 'running' }, status: 'doing' });
      const listed = await send(manager.url, 'GET', `/api/runs?requirementId=${res.json.id}`);
      expect(listed.json.items).toEqual([expect.objectContaining({ role: 'rd', status: 'running' })]);
    });

    it("refuses a parent other than the run's Requirement (400), a foreign session or credential (403), the owner without a parent (400) and bad fields (400)", async () => {
      const { parent, token } = await family();
      const stranger = await create('stranger');
      await refused(() => propose(parent, token, { parentRequirementId: stranger.id }), 400, 'parent_mismatch');
      await refused(() => propose(parent, token, { sourceSessionId: stranger.session.id }), 403, 'outside_run_scope');
      await refused(() => propose(parent, tokenFor(stranger)), 403, 'outside_run_scope');
      await refused(() => send(manager.url, 'POST', '/api/agent/requirements', { description: 'd', sourceSessionId: parent.session.id, title: 'x' }), 400, 'parent_required');
      await refused(() => propose(parent, token, { title: '' }), 400);
      await refused(() => propose(parent, token, { title: 'x'.repeat(201) }), 400);
      await refused(() => propose(parent, token, { provider: 'gpt' }), 400);
      await refused(() => propose(parent, token, { start: 'yes' }), 400);
      await refused(() => propose(parent, token, { createdBy: 'human' }), 400);
      await refused(() => send(manager.url, 'POST', '/api/agent/requirements', '{"title":', { ...as(token), 'Content-Type': 'application/json' }), 400);
    });

    it("lets the owner's token act for the Requirement it names, audited as a person, under the same relationship rules", async () => {
      const parent = await create('owner-driven parent');
      const stranger = await create('owner-driven stranger');
      const owner = { description: 'scripted follow-up', parentRequirementId: parent.id, sourceSessionId: parent.session.id, title: 'Scripted' };
      const child: Req = (await send(manager.url, 'POST', '/api/agent/requirements', owner)).json;
      expect(child).toMatchObject({ createdBy: 'rd_agent', parentRequirementId: parent.id, sourceSessionId: parent.session.id, status: 'todo' });
      const [proposed] = await query<{ actor_kind: string }>(
        manager.runtime.databasePath,
        "SELECT actor_kind FROM manager_event WHERE type = 'requirement.created' AND requirement_id = ?",
        [child.id],
      );
      expect(proposed).toEqual({ actor_kind: 'human' });
      // The named session must be the named Requirement's, and the rules still hold.
      await refused(() => send(manager.url, 'POST', '/api/agent/requirements', { ...owner, sourceSessionId: stranger.session.id }), 400, 'session_mismatch');
      const ownerAct = (target: string, source: Req, action: string) =>
        send(manager.url, 'POST', `/api/agent/requirements/${target}/action`, { action, sourceRequirementId: source.id, sourceSessionId: source.session.id });
      await refused(() => ownerAct(child.id, stranger, 'delete'), 409, 'not_proposed_by_source');
      expect((await ownerAct(child.id, parent, 'delete')).status).toBe(200);
      const familyOf = await send(manager.url, 'GET', `/api/agent/requirements/${parent.id}/related?sourceSessionId=${parent.session.id}`);
      expect(familyOf.json.children.map((c: Req) => c.id)).toEqual([child.id]);
      await refused(() => send(manager.url, 'GET', `/api/agent/requirements/${parent.id}/related?sourceSessionId=${stranger.session.id}`), 400, 'session_mismatch');
      await refused(
        () => send(manager.url, 'POST', `/api/agent/requirements/${parent.id}/related/${stranger.id}/messages`, { message: 'hi', sourceSessionId: parent.session.id }),
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
      expect(started.json).toMatchObject({ accepted: true, action: 'start', requirement: { id: child.id, status: 'doing' }, requirementId: child.id });
      expect(started.json.runId).toMatch(/^run_/);
      await refused(() => act(child.id, parent, token, 'start'), 409, 'run_active');
      await refused(() => act(child.id, parent, token, 'done'), 409, 'requirement_not_waiting_confirmation');
      await refused(() => act(child.id, parent, token, 'delete'), 409, 'requirement_started');

      const stopped = await act(child.id, parent, token, 'stop');
      expect(stopped.status).toBe(202);
      expect(stopped.json).toMatchObject({ action: 'stop', runId: started.json.runId });
      await settledAs(child.id, 'waiting_confirmation');
      await refused(() => act(child.id, parent, token, 'stop'), 409, 'no_active_run');

      const done = await act(child.id, parent, token, 'done');
      expect(done.status).toBe(200);
      expect(done.json.requirement).toMatchObject({ session: { state: 'completed' }, status: 'done' });
      expect(done.json.requirement.completedAt).not.toBeNull();
    });

    it("stop pauses the child like the dashboard's stop: a related message waits, the explicit start delivers it all", async () => {
      const { child, parent, token } = await family();
      await act(child.id, parent, token, 'start');
      expect((await message(parent, child.id, token, 'queued behind the run')).json).toMatchObject({ queued: true });
      await act(child.id, parent, token, 'stop');
      const paused = await until('the child paused', async () => ((await get(child.id)).session.pausedAt ? get(child.id) : undefined));
      expect(paused).toMatchObject({ session: { pendingMessageCount: 1, state: 'waiting_human' }, status: 'waiting_confirmation' });

      // Another agent's message is not a person starting it: recorded, queued, no run.
      const later = await message(parent, child.id, token, 'and one more thing');
      expect(later.json).toMatchObject({ queued: true, requirement: { session: { pausedAt: paused.session.pausedAt, pendingMessageCount: 2, state: 'waiting_human' } } });
      const runsOf = async () => (await send(manager.url, 'GET', `/api/runs?requirementId=${child.id}`)).json.items;
      expect(await runsOf()).toHaveLength(1);

      const started = await act(child.id, parent, token, 'start');
      expect(started.json.requirement).toMatchObject({ session: { pausedAt: null, state: 'running' }, status: 'doing' });
      const [latest] = await runsOf();
      expect(latest).toMatchObject({ id: started.json.runId, inputFromSequence: 1, inputToSequence: 2, status: 'running' });
    });

    it('deletes a todo child (200, cancelled)', async () => {
      const { child, parent, token } = await family();
      const res = await act(child.id, parent, token, 'delete');
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ action: 'delete', requirement: { status: 'cancelled' }, runId: null });
    });

    it("refuses anything but a direct child proposed by the same session: another session's child, a grandchild, a sibling, the parent", async () => {
      const { child, parent, token } = await family();
      const childToken = tokenFor(child);
      const grandchild: Req = (await propose(child, childToken)).json;
      const sibling: Req = (await propose(parent, token)).json;
      const other = await family('other parent');
      const human = await create("a person's Requirement");
      await refused(() => act(other.child.id, parent, token, 'start'), 409, 'not_proposed_by_source');
      await refused(() => act(grandchild.id, parent, token, 'start'), 409, 'not_proposed_by_source');
      await refused(() => act(sibling.id, child, childToken, 'start'), 409, 'not_proposed_by_source');
      await refused(() => act(parent.id, child, childToken, 'start'), 409, 'not_proposed_by_source');
      await refused(() => act(human.id, parent, token, 'delete'), 409, 'not_proposed_by_source');
      // The credential must be the source's own.
      await refused(() => act(child.id, parent, other.token, 'start'), 403, 'outside_run_scope');
      await refused(() => act(child.id, parent, token, 'start', { sourceSessionId: other.parent.session.id }), 403, 'outside_run_scope');
      await refused(() => act('req_00000000-0000-4000-8000-000000000000', parent, token, 'start'), 404, 'requirement_not_found');
      await refused(() => act(child.id, parent, token, 'archive'), 400);
      await refused(() => act(child.id, parent, token, 'start', { sourceRequirementId: undefined }), 400);
      expect((await get(child.id)).status).toBe('todo');
    });
  });

  describe('GET /api/agent/requirements/:id/related', () => {
    it('answers the direct parent and children, terminal ones included', async () => {
      const { child, parent, token } = await family();
      const second: Req = (await propose(parent, token)).json;
      await act(second.id, parent, token, 'delete');
      const childToken = tokenFor(child);
      const grandchild: Req = (await propose(child, childToken)).json;

      const fromParent = await related(parent, token);
      expect(fromParent.status).toBe(200);
      expect(fromParent.json.parent).toBeNull();
      expect(fromParent.json.children.map((r: Req) => [r.id, r.status])).toEqual([
        [child.id, 'todo'],
        [second.id, 'cancelled'],
      ]);
      const fromChild = await related(child, childToken);
      expect(fromChild.json.parent).toMatchObject({ id: parent.id, session: { id: parent.session.id } });
      expect(fromChild.json.children.map((r: Req) => r.id)).toEqual([grandchild.id]);
    });

    it("needs the run's own session (400 without, 403 another)", async () => {
      const { child, parent, token } = await family();
      await refused(() => related(parent, token, null), 400);
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
      expect(res.json).toMatchObject({
        accepted: true,
        message: { author: 'rd_agent', body: 'Use contract version 2.', deliverToRd: true, requirementId: child.id, sourceRequirementId: parent.id },
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
      await send(manager.url, 'POST', `/api/requirements/${parent.id}/start`, {});
      const res = await message(child, parent.id, tokenFor(child), 'Blocked on the schema change');
      expect(res.status).toBe(202);
      expect(res.json).toMatchObject({ queued: true, requirement: { session: { pendingMessageCount: 1, state: 'running' } } });
      expect((await conversation(parent.id)).map((m: { author: string; body: string }) => [m.author, m.body])).toEqual([['rd_agent', 'Blocked on the schema change']]);
      // The parent's own run is untouched: the message waits for the next one.
      expect((await send(manager.url, 'GET', `/api/runs?requirementId=${parent.id}`)).json.items).toHaveLength(1);
      expect((await related(parent, token)).json.children[0]).toMatchObject({ id: child.id, status: 'todo' });
    });

    it('reopens a done target in its original session', async () => {
      const { child, parent, token } = await family();
      await act(child.id, parent, token, 'start');
      await act(child.id, parent, token, 'stop');
      await settledAs(child.id, 'waiting_confirmation');
      await act(child.id, parent, token, 'done');
      const res = await message(parent, child.id, token, 'One more thing');
      expect(res.status).toBe(202);
      expect(res.json.requirement).toMatchObject({ completedAt: null, session: { id: child.session.id, state: 'running' }, status: 'doing' });
    });

    it('refuses an unrelated target (sibling, grandchild, stranger, itself), a cancelled one, a foreign credential and bad bodies', async () => {
      const { child, parent, token } = await family();
      const childToken = tokenFor(child);
      const sibling: Req = (await propose(parent, token)).json;
      const grandchild: Req = (await propose(child, childToken)).json;
      const stranger = await create('stranger');
      const cancelled: Req = (await propose(parent, token)).json;
      await act(cancelled.id, parent, token, 'delete');
      await refused(() => message(child, sibling.id, childToken), 409, 'not_related');
      await refused(() => message(parent, grandchild.id, token), 409, 'not_related');
      await refused(() => message(parent, stranger.id, token), 409, 'not_related');
      await refused(() => message(parent, parent.id, token), 409, 'not_related');
      await refused(() => message(parent, cancelled.id, token), 409, 'requirement_cancelled');
      await refused(() => message(parent, 'req_00000000-0000-4000-8000-000000000000', token), 404, 'requirement_not_found');
      await refused(() => message(parent, child.id, childToken), 403, 'outside_run_scope');
      await refused(() => message(parent, child.id, token, 'x', { sourceSessionId: child.session.id }), 403, 'outside_run_scope');
      await refused(() => message(parent, child.id, token, '   '), 400);
      await refused(() => message(parent, child.id, token, 'x'.repeat(100_001)), 400);
      await refused(() => message(parent, child.id, token, 'x', { author: 'human' }), 400);
    });
  });

  it('keeps every proposal consistent under concurrent calls', async () => {
    const parent = await create('busy parent');
    const token = tokenFor(parent);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => propose(parent, token, { start: i % 2 === 0, title: `child ${i}` })));
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
