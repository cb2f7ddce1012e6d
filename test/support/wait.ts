/**
 * Polls `probe` until it returns a value other than undefined/false, or fails after
 * `timeoutMs` with `what` and the last value seen — for state that settles asynchronously
 * (a run ending, a timer firing) without sleeping a fixed time.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 20_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) {
      return value;
    }
    last = value;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
