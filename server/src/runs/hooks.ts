/**
 * Work other modules register to run when something happens here (a run ended, a Requirement's
 * cancel settled, a review's end unit): one list per occasion, in registration order. How a
 * failure is reported is fixed where the list is made, so each occasion says the same thing.
 */
export class Hooks<A extends unknown[]> {
  private readonly hooks: Array<(...args: A) => Promise<unknown>> = [];

  /** `report` is told of a hook that failed in `settle` or `notify` (with the hook's arguments). */
  constructor(private readonly report: (err: Error, ...args: A) => void = () => undefined) {}

  add(hook: (...args: A) => Promise<unknown>): void {
    this.hooks.push(hook);
  }

  /** Each in turn, awaited; the first failure stops the rest and is thrown (a step inside a unit rolls it back, a guard refuses). */
  async runInOrder(...args: A): Promise<void> {
    for (const hook of this.hooks) {
      await hook(...args);
    }
  }

  /** Each in turn, awaited; a failure is reported and the next one still runs. */
  async settle(...args: A): Promise<void> {
    for (const hook of this.hooks) {
      await hook(...args).catch((err: unknown) => this.report(err as Error, ...args));
    }
  }

  /** Each started now and not awaited (the caller goes on); a failure is reported. */
  notify(...args: A): void {
    for (const hook of this.hooks) {
      void hook(...args).catch((err: unknown) => this.report(err as Error, ...args));
    }
  }
}
