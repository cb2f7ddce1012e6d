import type { ActiveRun } from './active-run';
import { ActiveRunRegistry } from './active-run-registry';

/** Only what ActiveRunRegistry reads of a run: its interrupt mode, its preparation and its process. */
function fakeRun(): ActiveRun {
  return { interruptMode: null, preparing: null, process: null } as unknown as ActiveRun;
}

describe(ActiveRunRegistry.name, () => {
  afterEach(() => jest.useRealTimers());

  it('stopAll marks every run a shutdown (keeping an interrupt in flight), kills it and waits until the owners removed them', async () => {
    const killed: ActiveRun[] = [];
    const sut = new ActiveRunRegistry<{ active: ActiveRun }>(
      (active) => killed.push(active),
      (entry) => entry.active,
    );
    const a = fakeRun();
    const b = fakeRun();
    b.interruptMode = 'stop';
    sut.set('a', { active: a });
    sut.set('b', { active: b });
    const stopped = sut.stopped(a);
    expect(stopped()).toBe(false);
    let done = false;
    const stopping = sut.stopAll().then(() => (done = true));
    expect(sut.stopping).toBe(true);
    expect(stopped()).toBe(true);
    expect(killed).toEqual([a, b]);
    expect([a.interruptMode, b.interruptMode]).toEqual(['shutdown', 'stop']);
    sut.delete('a');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(done).toBe(false);
    sut.delete('b');
    await stopping;
    expect(sut.size).toBe(0);
  });

  it('beginStop tags every watched run, and any set afterwards, a shutdown (a run still preparing ends because of the stop)', () => {
    const sut = new ActiveRunRegistry<{ active: ActiveRun }>(
      () => undefined,
      (entry) => entry.active,
    );
    const preparing = fakeRun();
    const interrupted = fakeRun();
    interrupted.interruptMode = 'steer';
    sut.set('preparing', { active: preparing });
    sut.set('interrupted', { active: interrupted });
    sut.beginStop();
    expect(sut.stopped(preparing)()).toBe(true);
    expect([preparing.interruptMode, interrupted.interruptMode]).toEqual(['shutdown', 'steer']);
    const late = fakeRun();
    sut.set('late', { active: late });
    expect(late.interruptMode).toBe('shutdown');
  });

  it('gone waits for one key only, and gives up after the bounded wait', async () => {
    const sut = new ActiveRunRegistry<ActiveRun>(
      () => undefined,
      (active) => active,
    );
    sut.set('a', fakeRun());
    sut.set('b', fakeRun());
    const goneA = sut.gone('a');
    setTimeout(() => sut.delete('a'), 30);
    await goneA;
    expect(sut.has('b')).toBe(true);
    jest.useFakeTimers();
    let settled = false;
    const goneB = sut.gone('b').then(() => (settled = true));
    await jest.advanceTimersByTimeAsync(9_000);
    expect(settled).toBe(false);
    await jest.advanceTimersByTimeAsync(1_100);
    await goneB;
    expect(sut.has('b')).toBe(true);
  });

  it('interruptAll aborts preparations and interrupts every process, a failing interrupt included', async () => {
    const sut = new ActiveRunRegistry<ActiveRun>(
      () => undefined,
      (active) => active,
    );
    const a = fakeRun();
    const b = fakeRun();
    const abort = new AbortController();
    a.preparing = abort;
    const interrupts: string[] = [];
    b.process = {
      interrupt: () => (interrupts.push('b'), Promise.reject(new Error('gone already'))),
    } as unknown as ActiveRun['process'];
    sut.set('a', a);
    sut.set('b', b);
    await sut.interruptAll();
    expect(abort.signal.aborted).toBe(true);
    expect(interrupts).toEqual(['b']);
  });
});
