import { KeyedLock } from './keyed-lock';

describe(KeyedLock.name, () => {
  it('runs bodies of one key one at a time, in arrival order, and other keys alongside', async () => {
    const sut = new KeyedLock();
    const log: string[] = [];
    const step = (name: string, gate: Promise<void>) => async () => {
      log.push(`${name} in`);
      await gate;
      log.push(`${name} out`);
    };
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const first = sut.run('repo', step('a', gate));
    const second = sut.run('repo', step('b', Promise.resolve()));
    const other = sut.run('other', step('c', Promise.resolve()));
    await other;
    expect(log).toEqual(['a in', 'c in', 'c out']);
    open();
    await Promise.all([first, second]);
    expect(log).toEqual(['a in', 'c in', 'c out', 'a out', 'b in', 'b out']);
  });

  it('goes on after a body that throws', async () => {
    const sut = new KeyedLock();
    await expect(sut.run('k', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(sut.run('k', () => Promise.resolve(7))).resolves.toBe(7);
  });
});
