import type { INestApplicationContext } from '@nestjs/common';

import { HUMAN_ACTOR } from '@server/events/event-log.service';
import type { RequirementResponseDto } from '@server/requirements/dto/requirement-response.dto';
import { RequirementsService } from '@server/requirements/requirements.service';
import { RunLifecycle } from '@server/runs/run-lifecycle.service';
import { TimerScheduler } from '@server/timers/timer-scheduler.service';
import { TimersService } from '@server/timers/timers.service';

import { FakeClock } from '../support/fake-clock';
import { until } from '../support/wait';
import { Workspace, describeStores, makeWorkspace, openServices, refusal, rows } from './harness';

jest.setTimeout(30_000);

const AGENT_ACTOR = { id: 'run_timer_owner', kind: 'agent' as const };

/**
 * Agent timers on TimersService and its scheduler, with a clock the test moves: when a timer is
 * due, what an occurrence delivers and does to the timer, what a cancel or the Requirement's end
 * does, and that a paused session is not woken by one.
 */
describeStores('Timers', (kind) => {
  let workspace: Workspace;
  let app: INestApplicationContext;
  const clock = new FakeClock();

  const requirements = () => app.get(RequirementsService);
  const timers = () => app.get(TimersService);
  const runs = () => app.get(RunLifecycle);
  const create = (title: string): Promise<RequirementResponseDto> =>
    requirements().create({ createdBy: 'human', provider: 'codex', title }, HUMAN_ACTOR);
  /** Moves time; the jump wakes the scheduler at once, and `settled` waits for its pass. */
  const advance = async (seconds: number) => {
    clock.advance(seconds * 1000);
    await app.get(TimerScheduler).settled();
  };
  const timerMessages = (id: string) =>
    rows<{ body: string; deliver: unknown }>(
      workspace,
      "SELECT body, deliver_to_rd AS deliver FROM requirement_message WHERE requirement_id = ? AND source = 'timer' ORDER BY sequence",
      [id],
    );
  const firedEvents = async (id: string) =>
    (
      await rows<{ payload: string }>(
        workspace,
        "SELECT payload FROM manager_event WHERE requirement_id = ? AND type = 'timer.fired' ORDER BY id",
        [id],
      )
    ).map(
      (e) =>
        JSON.parse(e.payload) as {
          scheduledFor: string;
          skippedOccurrences: number;
          timer: { id: string; nextFireAt: string | null; status: string };
        },
    );
  /** Started and stopped by a person: paused, so nothing but a person wakes it. */
  const paused = async (title: string) => {
    const requirement = await create(title);
    await runs().start(requirement.id, { message: 'go' }, HUMAN_ACTOR);
    await runs().interrupt(requirement.id, 'stop', HUMAN_ACTOR);
    return until('the stop', async () => {
      const now = await requirements().get(requirement.id);
      return now.status === 'waiting_confirmation' && now;
    });
  };

  beforeAll(async () => {
    workspace = makeWorkspace(kind);
    app = await openServices(workspace, {}, { clock });
  });
  afterAll(async () => {
    await app?.close();
    workspace?.cleanup();
  });

  it('arms a timer one interval from now and cancels it once; refuses an unknown timer, one of another Requirement, and a closed Requirement', async () => {
    const [owner, other] = [await create('owner'), await create('other')];
    const before = clock.now().getTime();
    const timer = await timers().create(
      owner.id,
      { description: 'check CI', intervalSeconds: 60, schedule: 'once' },
      AGENT_ACTOR,
    );
    const due = Date.parse(timer.nextFireAt as string);
    expect(due).toBeGreaterThanOrEqual(before + 60_000);
    expect(due).toBeLessThanOrEqual(clock.now().getTime() + 60_000);
    expect(timer).toMatchObject({ lastFiredAt: null, requirementId: owner.id, status: 'active' });
    expect(await timers().nextDueAt()).toEqual(new Date(due));

    expect(await refusal(timers().cancel(other.id, timer.id, HUMAN_ACTOR))).toEqual({
      code: 'timer_not_found',
      kind: 'not_found',
    });
    expect(await refusal(timers().cancel(owner.id, 'timer_unknown', HUMAN_ACTOR))).toEqual({
      code: 'timer_not_found',
      kind: 'not_found',
    });
    expect(await timers().cancel(owner.id, timer.id, HUMAN_ACTOR)).toMatchObject({
      nextFireAt: null,
      status: 'cancelled',
    });
    expect(await refusal(timers().cancel(owner.id, timer.id, HUMAN_ACTOR))).toEqual({
      code: 'timer_not_active',
      kind: 'conflict',
    });
    expect(await timers().nextDueAt()).toBeNull();
    await advance(120);
    expect(await timerMessages(owner.id)).toEqual([]);

    await requirements().cancel(other.id, HUMAN_ACTOR);
    expect(
      await refusal(
        timers().create(other.id, { description: 'late', intervalSeconds: 60, schedule: 'once' }, AGENT_ACTOR),
      ),
    ).toEqual({
      code: 'requirement_closed',
      kind: 'conflict',
    });
  });

  it('delivers a due occurrence once; a one-time timer completes, a recurring one skips what it missed and re-arms; a paused session is not woken', async () => {
    const requirement = await paused('watch');
    const once = await timers().create(
      requirement.id,
      { description: 'once', intervalSeconds: 60, schedule: 'once' },
      AGENT_ACTOR,
    );
    const recurring = await timers().create(
      requirement.id,
      { description: 'every minute', intervalSeconds: 60, schedule: 'recurring' },
      AGENT_ACTOR,
    );
    await advance(58);
    expect(await timerMessages(requirement.id)).toEqual([]);

    await advance(4);
    const first = await timerMessages(requirement.id);
    expect(first.map((m) => m.body.split('\n')[2])).toEqual(['Description: once', 'Description: every minute']);
    expect((await timers().listFor(requirement.id, {})).items.find((t) => t.id === once.id)).toMatchObject({
      lastFiredAt: expect.any(String),
      nextFireAt: null,
      status: 'completed',
    });
    const rearmed = (await timers().listFor(requirement.id, {})).items.find((t) => t.id === recurring.id);
    expect(rearmed).toMatchObject({ status: 'active' });
    expect(Date.parse(rearmed!.nextFireAt as string)).toBe(Date.parse(recurring.nextFireAt as string) + 60_000);

    // Down for a while: three minutes and a bit later, one occurrence for the two it missed.
    await advance(185);
    const fired = (await firedEvents(requirement.id)).filter((e) => e.timer.id === recurring.id);
    expect(fired.map((e) => e.skippedOccurrences)).toEqual([0, 2]);
    expect(Date.parse(fired[1].timer.nextFireAt as string)).toBe(
      Date.parse(recurring.nextFireAt as string) + 4 * 60_000,
    );
    expect(await timerMessages(requirement.id)).toHaveLength(3);
    // A stop's pause holds: the occurrences wait as pending input, no run started.
    expect((await requirements().get(requirement.id)).session).toMatchObject({
      pausedAt: expect.any(String),
      pendingMessageCount: 4,
      state: 'waiting_human',
    });
    expect(await rows(workspace, 'SELECT id FROM agent_run WHERE requirement_id = ?', [requirement.id])).toHaveLength(
      1,
    );

    // The Requirement's end ends its timers in the same unit: nothing fires after.
    await requirements().confirm(requirement.id, HUMAN_ACTOR);
    expect((await timers().listFor(requirement.id, {})).items.find((t) => t.id === recurring.id)).toMatchObject({
      nextFireAt: null,
      status: 'cancelled',
    });
    const [completed] = await rows<{ payload: string }>(
      workspace,
      "SELECT payload FROM manager_event WHERE requirement_id = ? AND type = 'requirement.completed'",
      [requirement.id],
    );
    expect(JSON.parse(completed.payload).timers).toEqual([
      expect.objectContaining({ id: recurring.id, status: 'cancelled' }),
    ]);
    await advance(300);
    expect(await timerMessages(requirement.id)).toHaveLength(3);
  });

  it('wakes a resting session: a due timer starts a run on its message', async () => {
    const requirement = await create('woken');
    await timers().create(
      requirement.id,
      { description: 'wake up', intervalSeconds: 30, schedule: 'once' },
      AGENT_ACTOR,
    );
    await advance(31);
    const woken = await requirements().get(requirement.id);
    expect(woken).toMatchObject({ session: { state: 'running' }, status: 'doing' });
    expect(
      await rows(
        workspace,
        'SELECT input_from_sequence AS "from", input_to_sequence AS "to" FROM agent_run WHERE requirement_id = ?',
        [requirement.id],
      ),
    ).toEqual([{ from: 1, to: 1 }]);
    expect((await timerMessages(requirement.id)).map((m) => Boolean(m.deliver))).toEqual([true]);
    await runs().cancel(requirement.id, HUMAN_ACTOR);
  });
});
