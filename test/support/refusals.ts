import * as path from 'node:path';

import type { Answer } from './api';
import { query, snapshotStore } from './db-snapshot';
import type { Json } from './http';

/**
 * Runs a request that must be refused and asserts the status, the error body (with `code`
 * when given) and that the store is unchanged: same row counts, same newest event id, same
 * attachment files. Returns the error body.
 */
export async function expectRefused(
  dataDirectory: string,
  request: () => Promise<{ status: number; json?: Json } | Answer<unknown>>,
  status: number,
  code?: string,
): Promise<Json> {
  const before = await snapshotStore(dataDirectory, { exceptBackground: true });
  const res = await request();
  // A typed answer carries the error body in `error`; `send` in `json`.
  const body: Json = 'error' in res ? res.error : res.json;
  expect(res.status).toBe(status);
  expect(body).toMatchObject({ statusCode: status });
  expect(typeof body.message).toBe('string');
  if (code) {
    expect(body.code).toBe(code);
  }
  const after = await snapshotStore(dataDirectory, { exceptBackground: true });
  if (after.maxEventId !== before.maxEventId) {
    // Which events landed (with the background ones) says at once whether the request or a job wrote them.
    const landed = await query(
      path.join(dataDirectory, 'factory.sqlite'),
      'SELECT id, type, actor_kind FROM manager_event WHERE id > ? ORDER BY id',
      [before.maxEventId],
    );
    expect({ ...after, landed }).toEqual({ ...before, landed: [] });
  }
  expect(after).toEqual(before);
  return body;
}
