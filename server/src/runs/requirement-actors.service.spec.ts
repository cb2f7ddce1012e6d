import { RequirementActors } from './requirement-actors.service';

describe(RequirementActors.name, () => {
  let sut: RequirementActors;

  beforeEach(() => {
    sut = new RequirementActors();
  });

  it('runs the decisions for one Requirement one after another, in order', async () => {
    const log: string[] = [];
    let release: () => void = () => undefined;
    let started: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const firstStarted = new Promise<void>((resolve) => (started = resolve));
    const first = sut.act('req_a', async () => {
      log.push('first:start');
      started();
      await gate;
      log.push('first:end');
      return 1;
    });
    const second = sut.act('req_a', () => {
      log.push('second');
      return Promise.resolve(2);
    });
    await firstStarted;
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['first:start']);
    release();
    await expect(Promise.all([first, second])).resolves.toEqual([1, 2]);
    expect(log).toEqual(['first:start', 'first:end', 'second']);
  });

  it('lets different Requirements decide concurrently', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const blocked = sut.act('req_a', () => gate);
    await expect(sut.act('req_b', () => Promise.resolve('b'))).resolves.toBe('b');
    release();
    await expect(blocked).resolves.toBeUndefined();
  });

  it('does not let a failed decision block the next one', async () => {
    const failed = sut.act('req_a', () => Promise.reject(new Error('boom')));
    const next = sut.act('req_a', () => Promise.resolve('next'));
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('next');
  });
});
