import { Hooks } from './hooks';

describe(Hooks.name, () => {
  it('runInOrder awaits each hook in registration order and stops at the first failure, which it throws', async () => {
    const log: string[] = [];
    const sut = new Hooks<[string]>();
    sut.add(async (id) => void log.push(`a ${id}`));
    sut.add(() => Promise.reject(new Error('refused')));
    sut.add(async (id) => void log.push(`c ${id}`));
    await expect(sut.runInOrder('req_1')).rejects.toThrow('refused');
    expect(log).toEqual(['a req_1']);
  });

  it('settle awaits each hook in turn, reports a failure and still runs the next', async () => {
    const log: string[] = [];
    const reported: string[] = [];
    const sut = new Hooks<[string]>((err, id) => reported.push(`${id}: ${err.message}`));
    sut.add(() => Promise.reject(new Error('boom')));
    sut.add(async (id) => {
      await new Promise((resolve) => setImmediate(resolve));
      log.push(`b ${id}`);
    });
    await sut.settle('req_2');
    expect(log).toEqual(['b req_2']);
    expect(reported).toEqual(['req_2: boom']);
  });

  it('notify starts every hook without waiting for them and reports a failure', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const log: string[] = [];
    const reported: string[] = [];
    const sut = new Hooks<[string]>((err, id) => reported.push(`${id}: ${err.message}`));
    sut.add(async (id) => {
      await gate;
      log.push(`a ${id}`);
    });
    sut.add(() => Promise.reject(new Error('late')));
    sut.add(async (id) => void log.push(`c ${id}`));
    sut.notify('req_3');
    // The third started although the first still waits.
    expect(log).toEqual(['c req_3']);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['c req_3', 'a req_3']);
    expect(reported).toEqual(['req_3: late']);
  });
});
