import { LocalTokenService } from '@server/auth/local-token.service';
import { RunCredentialsService } from '@server/auth/run-credentials.service';
import { RunningManager, startManager } from '@server/manager';
import { TimerScheduler } from '@server/timers/timer-scheduler.service';
import { TriggerDeliveryService } from '@server/triggers/trigger-delivery.service';

import { FakeClock } from './support/fake-clock';
import { type Json, registerToken, send } from './support/http';
import { IDLE_AGENT, STORE_ENV, Sandbox, makeSandbox } from './support/manager-process';
import { expectRefused } from './support/refusals';
import { SseConnection, connectSse } from './support/sse-client';
import { until } from './support/wait';

const MINUTE = 60_000;

interface Timer {
  id: string;
  status: string;
  nextFireAt: string | null;
  lastFiredAt: string | null;
  [key: string]: unknown;
}

/**
 * Timers on a real in-process server whose clock the test moves: the scheduler arms a real
 * timeout and re-arms when the clock jumps, so "60 seconds later" takes milliseconds. Restarts
 * reopen the same SQLite file with the clock further on.
 */
describe('Timers', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  let clock: FakeClock;

  const start = async () => {
    manager = await startManager({
      clock,
      env: { ...process.env, ...STORE_ENV, CODE_FACTORY_CLAUDE_EXECUTABLE: IDLE_AGENT, CODE_FACTORY_CODEX_EXECUTABLE: IDLE_AGENT, CODE_FACTORY_HOME: sandbox.home },
      overrides: { port: 0 },
      workspace: sandbox.workspace,
    });
    registerToken(manager.url, manager.app.get(LocalTokenService).value);
  };
  const create = async (title = 'Watch the CI') => (await send(manager.url, 'POST', '/api/requirements', { provider: 'codex', title })).json;
  const register = (requirementId: string, body: object, headers: Record<string, string> = {}) =>
    send(manager.url, 'POST', `/api/requirements/${requirementId}/timers`, { description: 'Check the CI of PR #184', intervalSeconds: 60, schedule: 'once', ...body }, headers);
  const timersOf = async (requirementId: string): Promise<Timer[]> => (await send(manager.url, 'GET', `/api/requirements/${requirementId}/timers`)).json.items;
  const timerFired = async (requirementId: string) =>
    (await send(manager.url, 'GET', `/api/requirements/${requirementId}/messages`)).json.items.filter((m: { source: string }) => m.source === 'timer');
  /**
   * Moves time and waits until the scheduler has handled whatever became due: the jump wakes it
   * synchronously (FakeClock calls its listeners in `advance`), so the pass is already in flight
   * when `settled` is called, and `settled` also waits for a pass folded in behind it.
   */
  const advance = async (ms: number) => {
    clock.advance(ms);
    await manager.app.get(TimerScheduler).settled();
  };
  const refused = (request: () => Promise<{ status: number; json?: Json }>, status: number, code?: string) =>
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
    const timer: Timer = created.json;
    expect(timer).toMatchObject({ intervalSeconds: 60, lastFiredAt: null, requirementId: requirement.id, schedule: 'once', status: 'active' });
    expect(Date.parse(timer.nextFireAt as string) - Date.parse(timer.createdAt as string)).toBe(MINUTE);

    await advance(30_000);
    expect(await timerFired(requirement.id)).toEqual([]);
    await advance(31_000);
    const [fired, ...more] = await timerFired(requirement.id);
    expect(more).toEqual([]);
    expect(fired).toMatchObject({
      author: 'system',
      deliverToRd: true,
      metadata: { description: 'Check the CI of PR #184', schedule: 'once', scheduledFor: timer.nextFireAt, timerId: timer.id },
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
    expect((await events.waitFor(4)).map((e) => e.event)).toEqual(['timer.created', 'message.created', 'timer.fired', 'run.started']);
    events.close();
    // The woken session runs with the timer message as its input.
    const runs = (await send(manager.url, 'GET', `/api/runs?requirementId=${requirement.id}`)).json.items;
    expect(runs).toEqual([expect.objectContaining({ inputFromSequence: fired.sequence, inputToSequence: fired.sequence, status: 'running' })]);

    await advance(10 * MINUTE);
    expect(await timerFired(requirement.id)).toHaveLength(1);
  });

  it('fires a recurring timer every interval, and after a gap once (missed occurrences skipped)', async () => {
    const requirement = await create();
    const timer: Timer = (await register(requirement.id, { schedule: 'recurring' })).json;
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
    const timer: Timer = (await register(requirement.id, { schedule: 'recurring' })).json;
    const events = await connectSse(`${manager.url}/api/events?after=0`);
    const cancelled = await send(manager.url, 'DELETE', `/api/requirements/${requirement.id}/timers/${timer.id}`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.json).toMatchObject({ id: timer.id, nextFireAt: null, status: 'cancelled' });
    expect((await events.waitFor(3)).map((e) => e.event)).toEqual(['requirement.created', 'timer.created', 'timer.cancelled']);
    events.close();
    await advance(5 * MINUTE);
    expect(await timerFired(requirement.id)).toEqual([]);
    await refused(() => send(manager.url, 'DELETE', `/api/requirements/${requirement.id}/timers/${timer.id}`), 409, 'timer_not_active');
    await refused(() => send(manager.url, 'DELETE', `/api/requirements/${requirement.id}/timers/tmr_00000000-0000-4000-8000-000000000000`), 404, 'timer_not_found');
    const other = await create('other');
    await refused(() => send(manager.url, 'DELETE', `/api/requirements/${other.id}/timers/${timer.id}`), 404, 'timer_not_found');
  });

  it('survives restarts: what came due while down is delivered once, nothing is delivered twice', async () => {
    const requirement = await create();
    const timer: Timer = (await register(requirement.id, { schedule: 'recurring' })).json;
    const once: Timer = (await register(requirement.id, { description: 'one-time', intervalSeconds: 120 })).json;
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
    expect(fired.map((m: { metadata: { timerId: string } }) => m.metadata.timerId).sort()).toEqual([timer.id, timer.id, once.id].sort());
    const byId = new Map((await timersOf(requirement.id)).map((t) => [t.id, t]));
    expect(byId.get(once.id)).toMatchObject({ status: 'completed' });
    expect(Date.parse(byId.get(timer.id)!.nextFireAt as string)).toBeGreaterThan(clock.now().getTime());
    const timerEvents = (await send(manager.url, 'GET', `/api/requirements/${requirement.id}/timers`)).json.items;
    expect(timerEvents).toHaveLength(2);
  });

  it("a stopped (paused) session records due timers and trigger messages without waking; a start delivers them, a person's reply resumes", async () => {
    const requirement = await create('paused');
    const runsOf = async () =>
      (await send(manager.url, 'GET', `/api/runs?requirementId=${requirement.id}`)).json.items as Array<{ status: string; inputFromSequence: number; inputToSequence: number }>;
    const get = async () => (await send(manager.url, 'GET', `/api/requirements/${requirement.id}`)).json;
    await send(manager.url, 'POST', `/api/requirements/${requirement.id}/start`, { message: 'work on it' });
    expect((await send(manager.url, 'POST', `/api/requirements/${requirement.id}/reply`, { message: 'queued behind the run' })).json.queued).toBe(true);
    await register(requirement.id, { description: 'Look again later' });
    await send(manager.url, 'POST', `/api/requirements/${requirement.id}/interrupt`, { mode: 'stop' });
    const paused = await until('paused', async () => ((await get()).session.pausedAt ? get() : undefined));
    expect(paused).toMatchObject({ session: { pendingMessageCount: 2, state: 'waiting_human' }, status: 'waiting_confirmation' });

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
    expect((await get()).session).toMatchObject({ pausedAt: paused.session.pausedAt, pendingMessageCount: 4, state: 'waiting_human' });

    // Still paused after a restart; the start takes everything pending.
    await manager.stop();
    await start();
    expect((await get()).session).toMatchObject({ pausedAt: paused.session.pausedAt, state: 'waiting_human' });
    const started = await send(manager.url, 'POST', `/api/requirements/${requirement.id}/start`, {});
    expect(started.json).toMatchObject({ requirement: { session: { pausedAt: null, state: 'running' } }, run: { inputFromSequence: 1, inputToSequence: 4 } });

    // Paused again; this time a person replies, which is a person acting: a run starts with it.
    await send(manager.url, 'POST', `/api/requirements/${requirement.id}/reply`, { message: 'queued again' });
    await send(manager.url, 'POST', `/api/requirements/${requirement.id}/interrupt`, { mode: 'stop' });
    await until('paused again', async () => ((await get()).session.pausedAt ? true : undefined));
    const reply = await send(manager.url, 'POST', `/api/requirements/${requirement.id}/reply`, { message: 'carry on' });
    expect(reply.json).toMatchObject({ queued: false, requirement: { session: { pausedAt: null, state: 'running' }, status: 'doing' } });
    const [latest] = await runsOf();
    expect(latest).toMatchObject({ inputFromSequence: 1, inputToSequence: 6, status: 'running' });
  });

  it('a manager shutdown ends runs without pausing them: after the restart a due timer wakes the session', async () => {
    const requirement = await create('restarted');
    await send(manager.url, 'POST', `/api/requirements/${requirement.id}/start`, { message: 'work on it' });
    await register(requirement.id, {});
    await manager.stop();
    await start();
    const get = async () => (await send(manager.url, 'GET', `/api/requirements/${requirement.id}`)).json;
    expect((await get()).session).toMatchObject({ pausedAt: null, state: 'waiting_human' });
    const runsOf = async () => (await send(manager.url, 'GET', `/api/runs?requirementId=${requirement.id}`)).json.items;
    expect(await runsOf()).toEqual([expect.objectContaining({ status: 'cancelled' })]);
    await advance(61_000);
    // 1: the start, 2: the manager's "stopped during this run" (issue 26 §8, not for the agent), 3: the timer.
    expect((await runsOf())[0]).toMatchObject({ inputFromSequence: 1, inputToSequence: 3, status: 'running' });
  });

  it("ends a Requirement's timers when it is confirmed or deleted, and refuses new ones (409)", async () => {
    const confirmed = await create('to confirm');
    const recurring: Timer = (await register(confirmed.id, { schedule: 'recurring' })).json;
    await send(manager.url, 'POST', `/api/requirements/${confirmed.id}/start`, {});
    await send(manager.url, 'POST', `/api/requirements/${confirmed.id}/interrupt`, { mode: 'stop' });
    await until('waiting_confirmation', async () => (await send(manager.url, 'GET', `/api/requirements/${confirmed.id}`)).json.status === 'waiting_confirmation' || undefined);
    const events = await connectSse(`${manager.url}/api/events`);
    expect((await send(manager.url, 'POST', `/api/requirements/${confirmed.id}/confirm`)).status).toBe(200);
    const [completed] = await events.waitFor(1);
    expect(completed).toMatchObject({ event: 'requirement.completed', data: { payload: { timers: [{ id: recurring.id, nextFireAt: null, status: 'cancelled' }] } } });
    events.close();
    expect(await timersOf(confirmed.id)).toEqual([expect.objectContaining({ id: recurring.id, status: 'cancelled' })]);

    const deleted = await create('to delete');
    const once: Timer = (await register(deleted.id, {})).json;
    expect((await send(manager.url, 'DELETE', `/api/requirements/${deleted.id}`)).status).toBe(204);
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
      await refused(() => register(requirement.id, body), 400);
    }
    await refused(() => register('req_00000000-0000-4000-8000-000000000000', {}), 404, 'requirement_not_found');
    await refused(() => send(manager.url, 'GET', '/api/requirements/req_00000000-0000-4000-8000-000000000000/timers'), 404);
    expect((await register(requirement.id, { description: 'x'.repeat(500), intervalSeconds: 31_536_000 })).status).toBe(201);

    const credentials = manager.app.get(RunCredentialsService);
    const token = credentials.issue({ requirementId: requirement.id, runId: 'run_timer_test', sessionId: requirement.session.id });
    const own = await register(requirement.id, {}, { Authorization: `Bearer ${token}` });
    expect(own.status).toBe(201);
    expect((await send(manager.url, 'GET', `/api/requirements/${requirement.id}/timers`, undefined, { Authorization: `Bearer ${token}` })).status).toBe(200);
    await refused(() => register(other.id, {}, { Authorization: `Bearer ${token}` }), 403);
    await refused(() => send(manager.url, 'GET', '/api/timers', undefined, { Authorization: `Bearer ${token}` }), 403);

    const all = await send(manager.url, 'GET', '/api/timers?status=active&limit=1');
    expect(all.status).toBe(200);
    expect(all.json.items).toHaveLength(1);
    expect(all.json.nextCursor).not.toBeNull();
    const rest = await send(manager.url, 'GET', `/api/timers?status=active&cursor=${encodeURIComponent(all.json.nextCursor)}`);
    expect(rest.json.items.map((t: Timer) => t.id)).not.toContain(all.json.items[0].id);
    expect(rest.json.items).toHaveLength(1);
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
    const outcomes = await Promise.all([delivery.deliver(occurrence('first')), delivery.deliver(occurrence('again')), delivery.deliver(occurrence('and again'))]);
    expect(outcomes.map((o) => o.status).sort()).toEqual(['delivered', 'duplicate', 'duplicate']);
    const messages = (await send(manager.url, 'GET', `/api/requirements/${requirement.id}/messages`)).json.items;
    expect(messages).toEqual([expect.objectContaining({ author: 'reviewer', deliverToRd: true, source: 'github', triggerId: 'github.pull-request.comment' })]);
    expect((await send(manager.url, 'GET', `/api/requirements/${requirement.id}`)).json).toMatchObject({ session: { state: 'running' }, status: 'doing' });

    // Done: kept for display, not delivered, the session stays completed.
    await send(manager.url, 'POST', `/api/requirements/${requirement.id}/interrupt`, { mode: 'stop' });
    await until('waiting_confirmation', async () => (await send(manager.url, 'GET', `/api/requirements/${requirement.id}`)).json.status === 'waiting_confirmation' || undefined);
    const confirmed = (await send(manager.url, 'POST', `/api/requirements/${requirement.id}/confirm`)).json;
    const late = await delivery.deliver(occurrence('after done', 'pr_1:comment:43'));
    expect(late).toMatchObject({ message: { deliverToRd: false }, status: 'recorded' });
    expect((await send(manager.url, 'GET', `/api/requirements/${requirement.id}`)).json).toMatchObject({
      session: { pendingMessageCount: confirmed.session.pendingMessageCount, state: 'completed' },
      status: 'done',
    });

    // The receipt outlives a restart.
    await manager.stop();
    await start();
    expect(await manager.app.get(TriggerDeliveryService).deliver(occurrence('after restart'))).toEqual({ message: null, status: 'duplicate' });
  });
});
