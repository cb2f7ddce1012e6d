/** A deterministic random sequence in [0, 1) from a seed: fault suites print the seed, so a failing order can be run again. */
export function rng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}
