import * as path from 'node:path';

import { onPostgres, query } from '../support/db-snapshot';

/**
 * The invariants of docs/architecture.md#invariants, checked on a manager's SQLite file (read-only; safe after kill -9, when the
 * WAL holds the latest commits), or its PostgreSQL schema. Returns the violations, empty when
 * every invariant holds. The SQL is what both accept, but for the JSON functions and SQLite's checks.
 */
export async function checkInvariants(dataDirectory: string): Promise<string[]> {
  const db = path.join(dataDirectory, 'factory.sqlite');
  const problems: string[] = [];
  const rows = <T>(sql: string, params: unknown[] = []) => query<T>(db, sql, params);
  const expectNone = async (what: string, sql: string) => {
    const found = await rows<Record<string, unknown>>(sql);
    if (found.length > 0) {
      problems.push(
        `${what}: ${JSON.stringify(found.slice(0, 5))}${found.length > 5 ? ` (+${found.length - 5})` : ''}`,
      );
    }
  };

  const json = (column: string, key: string) =>
    onPostgres() ? `(${column}::json->>'${key}')` : `json_extract(${column}, '$.${key}')`;
  // PostgreSQL checks its pages and foreign keys itself, as it writes them.
  if (!onPostgres()) {
    const [integrity] = await rows<{ integrity_check: string }>('PRAGMA integrity_check');
    if (integrity?.integrity_check !== 'ok') {
      problems.push(`integrity_check: ${JSON.stringify(integrity)}`);
    }
    await expectNone('foreign keys', 'PRAGMA foreign_key_check');
  }
  // 1. Exactly one session per Requirement.
  await expectNone(
    'a Requirement without exactly one session',
    'SELECT r.id, COUNT(s.id) AS sessions FROM requirement r LEFT JOIN agent_session s ON s.requirement_id = r.id GROUP BY r.id HAVING COUNT(s.id) <> 1',
  );
  // 2. At most one running run per session.
  await expectNone(
    'two running runs in a session',
    "SELECT session_id, COUNT(*) AS n FROM agent_run WHERE status = 'running' AND session_id IS NOT NULL GROUP BY session_id HAVING COUNT(*) > 1",
  );
  // 3. Sequences gap-free and counted on the session.
  await expectNone(
    'sequence gaps',
    `SELECT s.requirement_id, s.last_message_sequence, COUNT(m.id) AS n, COALESCE(MAX(m.sequence), 0) AS top, COALESCE(MIN(m.sequence), 1) AS bottom
       FROM agent_session s LEFT JOIN requirement_message m ON m.requirement_id = s.requirement_id
      GROUP BY s.requirement_id, s.last_message_sequence
     HAVING COUNT(m.id) <> COALESCE(MAX(m.sequence), 0) OR COALESCE(MAX(m.sequence), 0) <> s.last_message_sequence OR COALESCE(MIN(m.sequence), 1) <> 1`,
  );
  // 4. The consumed boundary is exactly what succeeded runs took, never more; the pending count is exact.
  await expectNone(
    'consumed boundary beyond what succeeded runs took',
    `SELECT * FROM (SELECT s.id, s.last_consumed_message_sequence AS consumed, s.last_message_sequence AS last,
            (SELECT COALESCE(MAX(r.input_to_sequence), 0) FROM agent_run r WHERE r.session_id = s.id AND r.status = 'succeeded') AS taken
       FROM agent_session s) x WHERE consumed <> taken OR consumed > last`,
  );
  await expectNone(
    'pending count',
    `SELECT * FROM (SELECT s.id, s.pending_message_count AS pending,
            (SELECT COUNT(*) FROM requirement_message m WHERE m.requirement_id = s.requirement_id AND m.deliver_to_rd = TRUE AND m.sequence > s.last_consumed_message_sequence) AS actual
       FROM agent_session s) x WHERE pending <> actual`,
  );
  // Budgets across the tree (issue 25 §4): a run's usage reaches its Requirement's tree usage and
  // every ancestor's in one unit, so a tree never counts less than its own runs and its children's
  // trees (more only once a child was purged, whose spending stays counted).
  await expectNone(
    'tree usage below its own and its children',
    `SELECT * FROM (SELECT r.id, r.tree_usage_input_tokens AS tree_in, r.tree_usage_output_tokens AS tree_out,
            r.usage_input_tokens + COALESCE((SELECT SUM(c.tree_usage_input_tokens) FROM requirement c WHERE c.parent_requirement_id = r.id), 0) AS counted_in,
            r.usage_output_tokens + COALESCE((SELECT SUM(c.tree_usage_output_tokens) FROM requirement c WHERE c.parent_requirement_id = r.id), 0) AS counted_out
       FROM requirement r) x WHERE tree_in < counted_in OR tree_out < counted_out`,
  );
  // A stop's pause ends only by opening a run: a paused session is never running, nor done.
  await expectNone(
    'a paused session running or completed',
    "SELECT id, state FROM agent_session WHERE paused_at IS NOT NULL AND state IN ('running', 'completed')",
  );
  // 5. The agent's own output is never deliverable to itself.
  await expectNone(
    'RD output marked deliverable',
    "SELECT id FROM requirement_message WHERE author = 'rd_agent' AND source_requirement_id IS NULL AND deliver_to_rd = TRUE",
  );
  // 10. One message per receipt; no receipt pointing at a missing message.
  await expectNone(
    'trigger occurrences delivered twice',
    `SELECT requirement_id, trigger_id, timer, at, url, chk, sha, st, dep, ev, COUNT(*) AS n FROM (
       SELECT requirement_id, trigger_id, ${json('metadata', 'timerId')} AS timer, ${json('metadata', 'scheduledFor')} AS at, ${json('metadata', 'commentUrl')} AS url,
              ${json('metadata', 'check')} AS chk, ${json('metadata', 'headSha')} AS sha, ${json('metadata', 'status')} AS st,
              ${json('metadata', 'dependencyRequirementId')} AS dep, ${json('metadata', 'event')} AS ev
         FROM requirement_message WHERE trigger_id IS NOT NULL AND trigger_id <> 'github.pull-request.status') m
      GROUP BY requirement_id, trigger_id, timer, at, url, chk, sha, st, dep, ev HAVING COUNT(*) > 1`,
  );
  await expectNone(
    'receipts of missing messages',
    'SELECT t.trigger_id, t.receipt_key FROM agent_trigger_receipt t LEFT JOIN requirement_message m ON m.id = t.message_id WHERE t.message_id IS NOT NULL AND m.id IS NULL',
  );
  await expectNone(
    'trigger messages without a receipt',
    'SELECT m.id FROM requirement_message m LEFT JOIN agent_trigger_receipt t ON t.message_id = m.id WHERE m.trigger_id IS NOT NULL AND t.message_id IS NULL',
  );
  // 7. One active review per PR.
  await expectNone(
    'two running reviews of a PR',
    "SELECT pull_request_id, COUNT(*) AS n FROM review_request WHERE status = 'running' GROUP BY pull_request_id HAVING COUNT(*) > 1",
  );
  // Timers: active ones have a next occurrence; ended ones none.
  await expectNone(
    'timer state',
    "SELECT id, status, next_fire_at FROM agent_timer WHERE (status = 'active') <> (next_fire_at IS NOT NULL)",
  );
  return problems;
}
