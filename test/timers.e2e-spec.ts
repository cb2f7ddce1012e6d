import type { Schemas } from '@libs/api-client';
import { LocalTokenService } from '@server/auth/local-token.service';
import { RunCredentialsService } from '@server/auth/run-credentials.service';
import { RunningManager, startManager } from '@server/manager';
import { TimerScheduler } from '@server/timers/timer-scheduler.service';
import { TriggerDeliveryService } from '@server/triggers/trigger-delivery.service';

import { FakeClock } from './support/fake-clock';
import { apiClient, ok } from './support/api';
import { registerToken, sendUntyped } from './support/http';
import { IDLE_AGENT, STORE_ENV, Sandbox, makeSandbox } from './support/manager-process';
import { expectRefused } from './support/refusals';
import { SseConnection, connectSse } from './support/sse-client';
import { until } from './support/wait';

const MINUTE = 60_000;

type Timer = Schemas['TimerResponseDto'];

/**
 * Timers on a real in-process server whose clock the test moves: the scheduler arms a real
 * timeout and re-arms when the clock jumps, so "60 seconds later" takes milliseconds. Restarts
 * reopen the same SQLite file with the clock further on.
 */
describe('Timers', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  /** The typed client with the workspace token. */
  const api = () => apiClient(manager.url);
  let clock: FakeClock;

  const start = async () => {
    manager = await startManager({
      clock,
      env: {
        ...process.env,
        ...STORE_ENV,
        CODE_FACTORY_CLAUDE_EXECUTABLE: IDLE_AGENT,
        CODE_FACTORY_CODEX_EXECUTABLE: IDLE_AGENT,
        CODE_FACTORY_HOME: sandbox.home,
      },
      overrides: { port: 0 },
      workspace: sandbox.workspace,
    });
    registerToken(manager.url, manager.app.get(LocalTokenService).value);
  };
  const create = async (title = 'Watch the CI') =>
    await ok(api().POST('/api/requirements', { body: { provider: 'codex', title } }));
  const TIMER: Schemas['CreateTimerDto'] = {
    description: 'Check the CI of PR #184',
    intervalSeconds: 60,
    schedule: 'once',
  };
  /** With the workspace token, or with `token` (a run credential). */
  const register = (requirementId: string, body: Partial<Schemas['CreateTimerDto']>, token?: string) =>
    apiClient(manager.url, token === undefined ? {} : { auth: token }).POST('/api/requirements/{id}/timers', {
      body: { ...TIMER, ...body },
      params: { path: { id: requirementId } },
    });
  const timersOf = async (requirementId: string): Promise<Timer[]> =>
    (await ok(api().GET('/api/requirements/{id}/timers', { params: { path: { id: requirementId } } }))).items;
  const timerFired = async (requirementId: string) =>
    (await ok(api().GET('/api/requirements/{id}/messages', { params: { path: { id: requirementId } } }))).items.filter(
      (m) => m.source === 'timer',
    );
  /**
   * Moves time and waits until the scheduler has handled whatever became due: the jump wakes it
   * synchronously (FakeClock calls its listeners in `advance`), so the pass is already in flight
   * when `settled` is called, and `settled` also waits for a pass folded in behind it.
   */
  const advance = async (ms: number) => {
    clock.advance(ms);
    await manager.app.get(TimerScheduler).settled();
  };
  const refused = (request: Parameters<typeof expectRefused>[1], status: number, code?: string) =>
    expectRefused(manager.runtime.paths.dataDirectory, request, status, code);

  beforeEach(async () => {
    sandbox = makeSandbox();
    clock = new FakeClock();
    await start();
  });

  afterEach(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('fires a one-time timer once as the "Timer fired." system message, waking the session', async () => {
    const requirement = await create();
    const events: SseConnection = await connectSse(`${manager.url}/api/events`);
    const created = await register(requirement.id, { description: 'Check the CI of PR #184' });
    expect(created.status).toBe(201);
    const timer: Timer = created.data!;
    expect(timer).toMatchObject({
      intervalSeconds: 60,
      lastFiredAt: null,
      requirementId: requirement.id,
      schedule: 'once',
      status: 'active',
    });
    expect(Date.parse(timer.nextFireAt as string) - Date.parse(timer.createdAt)).toBe(MINUTE);

    await advance(30_000);
    expect(await timerFired(requirement.id)).toEqual([]);
    await advance(31_000);
    const [fired, ...more] = await timerFired(requirement.id);
    expect(more).toEqual([]);
    expect(fired).toMatchObject({
      author: 'system',
      deliverToRd: true,
      metadata: {
        description: 'Check the CI of PR #184',
        schedule: 'once',
        scheduledFor: timer.nextFireAt,
        timerId: timer.id,
      },
      source: 'timer',
      triggerId: 'timer',
    });
    expect(fired.body).toMatch(/^Timer fired\.\n/);
    expect(fired.body).toContain(timer.id);
    expect(fired.body).toContain('Check the CI of PR #184');
    expect(fired.body).not.toContain('timer cancel');
    const [after] = await timersOf(requirement.id);
    expect(after).toMatchObject({ nextFireAt: null, status: 'completed' });
    expect(after.lastFiredAt).not.toBeNull();

    // Message, receipt and timer bookkeeping commit together; the woken run follows in the same unit.
    expect((await events.waitFor(4)).map((e) => e.event)).toEqual([
      'timer.created',
      'message.created',
      'timer.fired',
      'run.started',
    ]);
    events.close();
    // The woken session runs with the timer message as its input.
    const runs = (await ok(api().GET('/api/runs', { params: { query: { requirementId: requirement.id } } }))).items;
    expect(runs).toEqual([
      expect.objectContaining({
        inputFromSequence: fired.sequence,
        inputToSequence: fired.sequence,
        status: 'running',
      }),
    ]);

    await advance(10 * MINUTE);
    expect(await timerFired(requirement.id)).toHaveLength(1);
  });

  it('fires a recurring timer every interval, and after a gap once (missed occurrences skipped)', async () => {
    const requirement = await create();
    const timer: Timer = await ok(register(requirement.id, { schedule: 'recurring' }));
    const firstAt = Date.parse(timer.nextFireAt as string);
    await advance(61_000);
    expect(await timerFired(requirement.id)).toHaveLength(1);
    let [current] = await timersOf(requirement.id);
    expect(current).toMatchObject({ status: 'active' });
    expect(Date.parse(current.nextFireAt as string)).toBe(firstAt + MINUTE);

    await advance(60_000);
    expect(await timerFired(requirement.id)).toHaveLength(2);

    await advance(10 * MINUTE + 5_000); // ten occurrences missed: one delivery
    const fired = await timerFired(requirement.id);
    expect(fired).toHaveLength(3);
    expect(fired[2].body).toContain(`code-factory-cli timer cancel --id ${timer.id}`);
    [current] = await timersOf(requirement.id);
    const next = Date.parse(current.nextFireAt as string);
    expect(next).toBeGreaterThan(clock.now().getTime());
    expect(next - clock.now().getTime()).toBeLessThanOrEqual(MINUTE);
    expect((next - firstAt) % MINUTE).toBe(0);
  });

  it('cancels: no more occurrences; a second cancel is 409; unknown timers 404', async () => {
    const requirement = await create();
    const timer: Timer = await ok(register(requirement.id, { schedule: 'recurring' }));
    const events = await connectSse(`${manager.url}/api/events?after=0`);
    const cancelled = await api().DELETE('/api/requirements/{id}/timers/{timerId}', {
      params: { path: { id: requirement.id, timerId: timer.id } },
    });
    expect(cancelled.status).toBe(200);
    expect(cancelled.data).toMatchObject({ id: timer.id, nextFireAt: null, status: 'cancelled' });
    expect((await events.waitFor(3)).map((e) => e.event)).toEqual([
      'requirement.created',
      'timer.created',
      'timer.cancelled',
    ]);
    events.close();
    await advance(5 * MINUTE);
    expect(await timerFired(requirement.id)).toEqual([]);
    await refused(
      () =>
        api().DELETE('/api/requirements/{id}/timers/{timerId}', {
          params: { path: { id: requirement.id, timerId: timer.id } },
        }),
      409,
      'timer_not_active',
    );
    await refused(
      () =>
        api().DELETE('/api/requirements/{id}/timers/{timerId}', {
          params: { path: { id: requirement.id, timerId: 'tmr_00000000-0000-4000-8000-000000000000' } },
        }),
      404,
      'timer_not_found',
    );
    const other = await create('other');
    await refused(
      () =>
        api().DELETE('/api/requirements/{id}/timers/{timerId}', {
          params: { path: { id: other.id, timerId: timer.id } },
        }),
      404,
      'timer_not_found',
    );
  });

  it('survives restarts: what came due while down is delivered once, nothing is delivered twice', async () => {
    const requirement = await create();
    const timer: Timer = await ok(register(requirement.id, { schedule: 'recurring' }));
    const once: Timer = await ok(register(requirement.id, { description: 'one-time', intervalSeconds: 120 }));
    await advance(61_000);
    expect(await timerFired(requirement.id)).toHaveLength(1);

    // Restart at the same moment: the delivered occurrence is not delivered again.
    await manager.stop();
    await start();
    await manager.app.get(TimerScheduler).settled();
    expect(await timerFired(requirement.id)).toHaveLength(1);

    // Down for an hour: on start, each timer delivers once and the recurring one moves past now.
    await manager.stop();
    clock.advance(60 * MINUTE);
    await start();
    await until('due timers after restart', async () => (await timerFired(requirement.id)).length === 3 || undefined);
    await manager.app.get(TimerScheduler).settled();
    const fired = await timerFired(requirement.id);
    expect(fired.map((m) => m.metadata!.timerId).sort()).toEqual([timer.id, timer.id, once.id].sort());
    const byId = new Map((await timersOf(requirement.id)).map((t) => [t.id, t]));
    expect(byId.get(once.id)).toMatchObject({ status: 'completed' });
    expect(Date.parse(byId.get(timer.id)!.nextFireAt as string)).toBeGreaterThan(clock.now().getTime());
    const timerEvents = (
      await ok(api().GET('/api/requirements/{id}/timers', { params: { path: { id: requirement.id } } }))
    ).items;
    expect(timerEvents).toHaveLength(2);
  });

  it("a stopped (paused) session records due timers and trigger messages without waking; a start delivers them, a person's reply resumes", async () => {
    const requirement = await create('paused');
    const runsOf = async () =>
      (await ok(api().GET('/api/runs', { params: { query: { requirementId: requirement.id } } }))).items;
    const get = async () => await ok(api().GET('/api/requirements/{id}', { params: { path: { id: requirement.id } } }));
    await api().POST('/api/requirements/{id}/start', {
      params: { path: { id: requirement.id } },
      body: { message: 'work on it' },
    });
    expect(
      (
        await ok(
          api().POST('/api/requirements/{id}/reply', {
            params: { path: { id: requirement.id } },
            body: { message: 'queued behind the run' },
          }),
        )
      ).queued,
    ).toBe(true);
    await register(requirement.id, { description: 'Look again later' });
    await api().POST('/api/requirements/{id}/interrupt', {
      params: { path: { id: requirement.id } },
      body: { mode: 'stop' },
    });
    const paused = await until('paused', async () => ((await get()).session.pausedAt ? get() : undefined));
    expect(paused).toMatchObject({
      session: { pendingMessageCount: 2, state: 'waiting_human' },
      status: 'waiting_confirmation',
    });

    // The timer comes due and a trigger delivers: both recorded for the agent, neither wakes it.
    await advance(61_000);
    expect(await timerFired(requirement.id)).toEqual([expect.objectContaining({ deliverToRd: true })]);
    const trigger = await manager.app.get(TriggerDeliveryService).deliver({
      author: 'reviewer',
      body: 'a comment on the PR',
      metadata: { pullRequestId: 'pr_1' },
      receiptKey: 'pr_1:comment:paused',
      requirementId: requirement.id,
      source: 'github',
      triggerId: 'github.pull-request.comment',
    });
    expect(trigger).toMatchObject({ message: { deliverToRd: true, sequence: 4 }, status: 'delivered' });
    expect(await runsOf()).toHaveLength(1);
    expect((await get()).session).toMatchObject({
      pausedAt: paused.session.pausedAt,
      pendingMessageCount: 4,
      state: 'waiting_human',
    });

    // Still paused after a restart; the start takes everything pending.
    await manager.stop();
    await start();
    expect((await get()).session).toMatchObject({ pausedAt: paused.session.pausedAt, state: 'waiting_human' });
    const started = await api().POST('/api/requirements/{id}/start', {
      params: { path: { id: requirement.id } },
      body: {},
    });
    expect(started.data).toMatchObject({
      requirement: { session: { pausedAt: null, state: 'running' } },
      run: { inputFromSequence: 1, inputToSequence: 4 },
    });

    // Paused again; this time a person replies, which is a person acting: a run starts with it.
    await api().POST('/api/requirements/{id}/reply', {
      params: { path: { id: requirement.id } },
      body: { message: 'queued again' },
    });
    await api().POST('/api/requirements/{id}/interrupt', {
      params: { path: { id: requirement.id } },
      body: { mode: 'stop' },
    });
    await until('paused again', async () => ((await get()).session.pausedAt ? true : undefined));
    const reply = await api().POST('/api/requirements/{id}/reply', {
      params: { path: { id: requirement.id } },
      body: { message: 'carry on' },
    });
    expect(reply.data).toMatchObject({
      queued: false,
      requirement: { session: { pausedAt: null, state: 'running' }, status: 'doing' },
    });
    const [latest] = await runsOf();
    expect(latest).toMatchObject({ inputFromSequence: 1, inputToSequence: 6, status: 'running' });
  });

  it('a manager shutdown ends runs without pausing them: after the restart a due timer wakes the session', async () => {
    const requirement = await create('restarted');
    await api().POST('/api/requirements/{id}/start', {
      params: { path: { id: requirement.id } },
      body: { message: 'work on it' },
    });
    await register(requirement.id, {});
    await manager.stop();
    await start();
    const get = async () => await ok(api().GET('/api/requirements/{id}', { params: { path: { id: requirement.id } } }));
    expect((await get()).session).toMatchObject({ pausedAt: null, state: 'waiting_human' });
    const runsOf = async () =>
      (await ok(api().GET('/api/runs', { params: { query: { requirementId: requirement.id } } }))).items;
    expect(await runsOf()).toEqual([expect.objectContaining({ status: 'cancelled' })]);
    await advance(61_000);
    // 1: the start, 2: the manager's "stopped during this run" (issue 26 §8, not for the agent), 3: the timer.
    expect((await runsOf())[0]).toMatchObject({ inputFromSequence: 1, inputToSequence: 3, status: 'running' });
  });

  it("ends a Requirement's timers when it is confirmed or deleted, and refuses new ones (409)", async () => {
    const confirmed = await create('to confirm');
    const recurring: Timer = await ok(register(confirmed.id, { schedule: 'recurring' }));
    await api().POST('/api/requirements/{id}/start', { params: { path: { id: confirmed.id } }, body: {} });
    await api().POST('/api/requirements/{id}/interrupt', {
      params: { path: { id: confirmed.id } },
      body: { mode: 'stop' },
    });
    await until(
      'waiting_confirmation',
      async () =>
        (await ok(api().GET('/api/requirements/{id}', { params: { path: { id: confirmed.id } } }))).status ===
          'waiting_confirmation' || undefined,
    );
    const events = await connectSse(`${manager.url}/api/events`);
    expect(
      (await api().POST('/api/requirements/{id}/confirm', { params: { path: { id: confirmed.id } } })).status,
    ).toBe(200);
    const [completed] = await events.waitFor(1);
    expect(completed).toMatchObject({
      event: 'requirement.completed',
      data: { payload: { timers: [{ id: recurring.id, nextFireAt: null, status: 'cancelled' }] } },
    });
    events.close();
    expect(await timersOf(confirmed.id)).toEqual([expect.objectContaining({ id: recurring.id, status: 'cancelled' })]);

    const deleted = await create('to delete');
    const once: Timer = await ok(register(deleted.id, {}));
    expect((await api().DELETE('/api/requirements/{id}', { params: { path: { id: deleted.id } } })).status).toBe(204);
    expect(await timersOf(deleted.id)).toEqual([expect.objectContaining({ id: once.id, status: 'cancelled' })]);

    await advance(5 * MINUTE);
    expect(await timerFired(confirmed.id)).toEqual([]);
    expect(await timerFired(deleted.id)).toEqual([]);
    await refused(() => register(confirmed.id, {}), 409, 'requirement_closed');
    await refused(() => register(deleted.id, {}), 409, 'requirement_closed');
  });

  it('validates timers (400), unknown Requirements (404), and run credentials of other Requirements (403)', async () => {
    const requirement = await create();
    const other = await create('other');
    for (const body of [
      { intervalSeconds: 59 },
      { intervalSeconds: 31_536_001 },
      { intervalSeconds: 60.5 },
      { intervalSeconds: '60' },
      { schedule: 'daily' },
      { description: '' },
      { description: '   ' },
      { description: 'x'.repeat(501) },
      { unexpected: true },
    ]) {
      // Invalid timers on purpose: untyped.
      await refused(
        () => sendUntyped(manager.url, 'POST', `/api/requirements/${requirement.id}/timers`, { ...TIMER, ...body }),
        400,
      );
    }
    await refused(() => register('req_00000000-0000-4000-8000-000000000000', {}), 404, 'requirement_not_found');
    await refused(
      () =>
        api().GET('/api/requirements/{id}/timers', {
          params: { path: { id: 'req_00000000-0000-4000-8000-000000000000' } },
        }),
      404,
    );
    expect((await register(requirement.id, { description: 'x'.repeat(500), intervalSeconds: 31_536_000 })).status).toBe(
      201,
    );

    const credentials = manager.app.get(RunCredentialsService);
    const token = credentials.issue({
      requirementId: requirement.id,
      runId: 'run_timer_test',
      sessionId: requirement.session.id,
    });
    const own = await register(requirement.id, {}, token);
    expect(own.status).toBe(201);
    expect(
      (
        await apiClient(manager.url, { auth: token }).GET('/api/requirements/{id}/timers', {
          params: { path: { id: requirement.id } },
        })
      ).status,
    ).toBe(200);
    await refused(() => register(other.id, {}, token), 403);
    await refused(() => apiClient(manager.url, { auth: token }).GET('/api/timers'), 403);

    const all = await api().GET('/api/timers', { params: { query: { status: 'active', limit: 1 } } });
    expect(all.status).toBe(200);
    expect(all.data!.items).toHaveLength(1);
    expect(all.data!.nextCursor).not.toBeNull();
    const rest = await api().GET('/api/timers', {
      params: { query: { status: 'active', cursor: all.data!.nextCursor ?? undefined } },
    });
    expect(rest.data!.items.map((t) => t.id)).not.toContain(all.data!.items[0].id);
    expect(rest.data!.items).toHaveLength(1);
  });

  it('trigger framework: one delivery per receipt key, even when concurrent; recorded without waking once done', async () => {
    const requirement = await create('triggered');
    const delivery = manager.app.get(TriggerDeliveryService);
    const occurrence = (body: string, receiptKey = 'pr_1:comment:42') => ({
      author: 'reviewer' as const,
      body,
      metadata: { pullRequestId: 'pr_1' },
      receiptKey,
      requirementId: requirement.id,
      source: 'github',
      triggerId: 'github.pull-request.comment',
    });
    const outcomes = await Promise.all([
      delivery.deliver(occurrence('first')),
      delivery.deliver(occurrence('again')),
      delivery.deliver(occurrence('and again')),
    ]);
    expect(outcomes.map((o) => o.status).sort()).toEqual(['delivered', 'duplicate', 'duplicate']);
    const messages = (
      await ok(api().GET('/api/requirements/{id}/messages', { params: { path: { id: requirement.id } } }))
    ).items;
    expect(messages).toEqual([
      expect.objectContaining({
        author: 'reviewer',
        deliverToRd: true,
        source: 'github',
        triggerId: 'github.pull-request.comment',
      }),
    ]);
    expect(await ok(api().GET('/api/requirements/{id}', { params: { path: { id: requirement.id } } }))).toMatchObject({
      session: { state: 'running' },
      status: 'doing',
    });

    // Done: kept for display, not delivered, the session stays completed.
    await api().POST('/api/requirements/{id}/interrupt', {
      params: { path: { id: requirement.id } },
      body: { mode: 'stop' },
    });
    await until(
      'waiting_confirmation',
      async () =>
        (await ok(api().GET('/api/requirements/{id}', { params: { path: { id: requirement.id } } }))).status ===
          'waiting_confirmation' || undefined,
    );
    const confirmed = await ok(
      api().POST('/api/requirements/{id}/confirm', { params: { path: { id: requirement.id } } }),
    );
    const late = await delivery.deliver(occurrence('after done', 'pr_1:comment:43'));
    expect(late).toMatchObject({ message: { deliverToRd: false }, status: 'recorded' });
    expect(await ok(api().GET('/api/requirements/{id}', { params: { path: { id: requirement.id } } }))).toMatchObject({
      session: { pendingMessageCount: confirmed.session.pendingMessageCount, state: 'completed' },
      status: 'done',
    });

    // The receipt outlives a restart.
    await manager.stop();
    await start();
    expect(await manager.app.get(TriggerDeliveryService).deliver(occurrence('after restart'))).toEqual({
      message: null,
      status: 'duplicate',
    });
  });
});
