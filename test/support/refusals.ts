import { snapshotStore } from './db-snapshot';
import type { Json } from './http';

/**
 * Runs a request that must be refused and asserts the status, the error body (with `code`
 * when given) and that the store is unchanged: same row counts, same newest event id, same
 * attachment files. Returns the error body.
 */
export async function expectRefused(dataDirectory: string, request: () => Promise<{ status: number; json?: Json }>, status: number, code?: string): Promise<Json> {
  const before = await snapshotStore(dataDirectory, { exceptTraces: true });
  const res = await request();
  expect(res.status).toBe(status);
  expect(res.json).toMatchObject({ statusCode: status });
  expect(typeof res.json.message).toBe('string');
  if (code) {
    expect(res.json.code).toBe(code);
  }
  expect(await snapshotStore(dataDirectory, { exceptTraces: true })).toEqual(before);
  return res.json;
}
