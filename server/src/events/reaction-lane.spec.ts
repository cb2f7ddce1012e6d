import type { ManagerEvent, ManagerEventType } from '@libs/contracts';

import { CATCH_UP_BATCH, HELD_MAX, type LaneSource, ReactionLane } from './reaction-lane';

function event(id: number, type: ManagerEventType = 'requirement.updated'): ManagerEvent {
  return { id, type } as ManagerEvent;
}

/** A log in memory: what `read` hands a catching-up lane. */
class Log implements LaneSource {
  readonly events: ManagerEvent[] = [];
  readonly failures: string[] = [];
  reads = 0;

  read(after: number, types: readonly ManagerEventType[], limit: number): Promise<ManagerEvent[]> {
    this.reads += 1;
    return Promise.resolve(this.events.filter((e) => e.id > after && types.includes(e.type)).slice(0, limit));
  }

  failed(reaction: string, error: Error): void {
    this.failures.push(`${reaction}: ${error.message}`);
  }

  commit(lane: ReactionLane, ...events: ManagerEvent[]): void {
    for (const e of events) {
      this.events.push(e);
      lane.offer(e);
    }
  }
}

interface Deferred {
  ids: number[];
  resolve: () => void;
  reject: (err: Error) => void;
}

/** A reaction whose calls the test settles one by one. */
function controlled() {
  const calls: Deferred[] = [];
  const call = (batch: ManagerEvent[]) =>
    new Promise<void>((resolve, reject) => calls.push({ ids: batch.map((e) => e.id), reject, resolve }));
  return { call, calls };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('ReactionLane', () => {
  afterEach(() => jest.useRealTimers());

  it('starts from its cursor, hands over what came after it, then each committed event of its types as it commits', async () => {
    const log = new Log();
    const handled: number[][] = [];
    const lane = new ReactionLane(
      'R.react',
      ['requirement.updated'],
      0,
      (batch) => {
        handled.push(batch.map((e) => e.id));
        return Promise.resolve();
      },
      log,
      () => new Date(),
    );
    log.events.push(event(1), event(2, 'message.created'), event(3));
    await lane.start(1);
    expect(handled).toEqual([[3]]);
    log.commit(lane, event(4, 'message.created'), event(5));
    await flush();
    expect(handled).toEqual([[3], [5]]);
    expect(lane.position).toBe(5);
    expect(lane.state()).toMatchObject({ failures: 0, handled: 2, inFlight: 0, lastError: null, position: 5 });
  });

  it('holds what commits while it catches up, and hands each event over once', async () => {
    const log = new Log();
    const { call, calls } = controlled();
    const lane = new ReactionLane('R.react', ['requirement.updated'], 0, call, log, () => new Date());
    log.events.push(event(1));
    const started = lane.start(0);
    await flush();
    // The catch-up's call for 1 runs; 1 (published late) and 2 commit meanwhile.
    lane.offer(event(1));
    log.commit(lane, event(2));
    expect(calls.map((c) => c.ids)).toEqual([[1]]);
    calls[0].resolve();
    await started;
    await flush();
    expect(calls.map((c) => c.ids)).toEqual([[1], [2]]);
    calls[1].resolve();
    await flush();
    expect(lane.position).toBe(2);
  });

  it('moves its cursor past a call only once every earlier call resolved', async () => {
    const log = new Log();
    const { call, calls } = controlled();
    const lane = new ReactionLane('R.react', ['requirement.updated'], 0, call, log, () => new Date());
    await lane.start(0);
    log.commit(lane, event(1), event(2), event(3, 'message.created'));
    expect(calls.map((c) => c.ids)).toEqual([[1], [2]]);
    calls[1].resolve();
    await flush();
    expect(lane.position).toBe(0);
    expect(lane.state().inFlight).toBe(1);
    calls[0].resolve();
    await flush();
    // Both resolved: level with everything seen, the event of another type too.
    expect(lane.position).toBe(3);
  });

  it('retries a failed call from its cursor with a growing wait, shows the failure, and clears it once it succeeds', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    const log = new Log();
    let failing = 2;
    const handled: number[][] = [];
    const lane = new ReactionLane(
      'R.react',
      ['requirement.updated'],
      0,
      (batch) => {
        handled.push(batch.map((e) => e.id));
        if (failing > 0) {
          failing -= 1;
          return Promise.reject(new Error('git is away'));
        }
        return Promise.resolve();
      },
      log,
      () => new Date(),
    );
    await lane.start(0);
    log.commit(lane, event(1));
    await flush();
    expect(lane.state()).toMatchObject({ failures: 1, lastError: { message: 'git is away' }, position: 0 });
    expect(lane.state().retryAt).not.toBeNull();
    // Meanwhile 2 commits: it waits for the retry, which reads both from the log.
    log.commit(lane, event(2));
    expect(handled).toEqual([[1]]);
    await jest.advanceTimersByTimeAsync(1000);
    expect(handled).toEqual([[1], [1, 2]]);
    expect(lane.state().failures).toBe(2);
    await jest.advanceTimersByTimeAsync(1999);
    expect(handled).toHaveLength(2);
    await jest.advanceTimersByTimeAsync(1);
    expect(handled).toEqual([[1], [1, 2], [1, 2]]);
    expect(lane.state()).toMatchObject({ failures: 0, lastError: null, position: 2, retryAt: null });
    expect(log.failures).toEqual(['R.react: git is away', 'R.react: git is away']);
  });

  it('catches up a batch at a time', async () => {
    const log = new Log();
    const batches: number[] = [];
    const lane = new ReactionLane(
      'R.react',
      ['requirement.updated'],
      0,
      (batch) => {
        batches.push(batch.length);
        return Promise.resolve();
      },
      log,
      () => new Date(),
    );
    for (let id = 1; id <= CATCH_UP_BATCH + 3; id += 1) {
      log.events.push(event(id));
    }
    await lane.start(0);
    expect(batches).toEqual([CATCH_UP_BATCH, 3]);
    expect(lane.position).toBe(CATCH_UP_BATCH + 3);
  });

  it('calls nothing once halted: what commits after is left for the next start', async () => {
    const log = new Log();
    const handled: number[] = [];
    const lane = new ReactionLane(
      'R.react',
      ['requirement.updated'],
      0,
      (batch) => {
        handled.push(...batch.map((e) => e.id));
        return Promise.resolve();
      },
      log,
      () => new Date(),
    );
    await lane.start(0);
    log.commit(lane, event(1));
    await flush();
    lane.halt();
    log.commit(lane, event(2));
    await lane.idle(100);
    expect(handled).toEqual([1]);
    expect(lane.position).toBe(1);
  });

  it('calls nothing after a halt that came while it was catching up', async () => {
    const log = new Log();
    const { call, calls } = controlled();
    const lane = new ReactionLane('R.react', ['requirement.updated'], 0, call, log, () => new Date());
    log.events.push(event(1));
    const started = lane.start(0);
    await flush();
    log.commit(lane, event(2));
    lane.halt();
    calls[0].resolve();
    await started;
    await flush();
    expect(calls.map((c) => c.ids)).toEqual([[1]]);
    expect(lane.position).toBe(1);
  });

  it('reads the log again rather than holding without bound what commits while it catches up', async () => {
    const log = new Log();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const handed: number[] = [];
    const lane = new ReactionLane(
      'R.react',
      ['requirement.updated'],
      0,
      (batch) => {
        handed.push(...batch.map((e) => e.id));
        return handed.length === 1 ? gate : Promise.resolve();
      },
      log,
      () => new Date(),
    );
    log.events.push(event(1));
    const started = lane.start(0);
    await flush();
    for (let id = 2; id <= HELD_MAX + 2; id += 1) {
      log.commit(lane, event(id));
    }
    release();
    await started;
    // Past HELD_MAX the held events were dropped and read from the log instead: each handed over once.
    expect(handed).toEqual(Array.from({ length: HELD_MAX + 2 }, (_, i) => i + 1));
    expect(lane.position).toBe(HELD_MAX + 2);
    log.commit(lane, event(HELD_MAX + 3));
    expect(handed).toHaveLength(HELD_MAX + 3);
  });

  it('never moves its cursor back when the log was read past what the bus published (team mode)', async () => {
    const log = new Log();
    const handled: number[] = [];
    const lane = new ReactionLane(
      'R.react',
      ['requirement.updated'],
      0,
      (batch) => {
        handled.push(...batch.map((e) => e.id));
        return Promise.resolve();
      },
      log,
      () => new Date(),
    );
    log.events.push(event(1), event(2), event(3));
    await lane.start(0);
    expect(lane.position).toBe(3);
    // The board's feed publishes 2 and 3 only now: nothing goes back, nothing is handed twice.
    lane.offer(event(2, 'message.created'));
    lane.offer(event(3));
    expect(lane.position).toBe(3);
    log.commit(lane, event(4));
    expect(handled).toEqual([1, 2, 3, 4]);
  });

  it('ignores the outcome of a call made before a failure once the retry went live', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    const log = new Log();
    const { call, calls } = controlled();
    const lane = new ReactionLane('R.react', ['requirement.updated'], 0, call, log, () => new Date());
    await lane.start(0);
    log.commit(lane, event(1), event(2));
    calls[0].reject(new Error('first'));
    await flush();
    await jest.advanceTimersByTimeAsync(1000);
    // The retry reads 1 and 2 again and succeeds; the old call for 2 fails only afterwards.
    calls[2].resolve();
    await flush();
    calls[1].reject(new Error('late'));
    await flush();
    expect(lane.state()).toMatchObject({ failures: 0, lastError: null, position: 2, retryAt: null });
    expect(log.failures).toEqual(['R.react: first']);
  });
});
