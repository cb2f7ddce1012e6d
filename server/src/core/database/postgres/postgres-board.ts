import * as os from 'node:os';

import { Client } from 'pg';

import type { Person } from '@libs/contracts';

import { type BoardRunner, recordRunners, whenRunnerUnknown } from '../../board/runner-directory';
import { type PostgresStore, pgClientConfig } from '../store';

/** A runner whose heartbeat is older than this is offline (docs/team-mode.md, "Who runs what"). */
export const BOARD_LEASE_MS = 15_000;
/** Heartbeats (and leadership attempts) per lease period. */
const BEATS_PER_LEASE = 3;

/**
 * Team mode's membership of one board on PostgreSQL (docs/team-mode.md): instead of the
 * workspace lock's "one manager per schema", any number of runners share the board's schema.
 *
 * - Joining takes the board's start lock (a session advisory lock every starting runner waits
 *   for), so one runner at a time creates the schema, runs the migrations and registers; the
 *   lock is given back once this runner listens.
 * - Its `am_runner` row is refreshed every lease period / 3 with the server's clock (machines'
 *   clocks need not agree); a runner whose heartbeat is older than one lease period is offline.
 * - `am_writer` is the board's write counter: the event ids' high-water mark and a generation
 *   that every committed batch bumps (see PostgresGroupCommit, board mode).
 * - Leadership (the once-per-board jobs) is a second session advisory lock on this connection,
 *   tried at every heartbeat: a leader that dies loses it with its session.
 */
export class PostgresBoard {
  private client: Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private leader = false;
  private beating: Promise<void> | null = null;
  /** When the runners were last read outside a heartbeat (see readRunnersSoon). */
  private lastExtraRead = 0;
  private readonly lockKey: string;
  private readonly leadershipListeners: Array<() => void> = [];
  private readonly runnersListeners: Array<(runners: readonly BoardRunner[]) => void> = [];

  constructor(
    private readonly store: PostgresStore & { board: NonNullable<PostgresStore['board']> },
    private readonly person: Pick<Person, 'name' | 'email'>,
    private readonly onLost: (err: Error) => void = () => undefined,
  ) {
    this.lockKey = store.schema;
  }

  get runnerId(): string {
    return this.store.board.runnerId;
  }

  get name(): string {
    return this.store.board.name;
  }

  /** Whether this runner holds the board's leadership now. */
  get leads(): boolean {
    return this.leader;
  }

  /** Called each time this runner becomes the leader (the once-per-board jobs catch up then). */
  onLeadership(listener: () => void): void {
    this.leadershipListeners.push(listener);
  }

  /** Called at every heartbeat with the board's runners as read then (after this beat's attempt at leadership). */
  onRunners(listener: (runners: readonly BoardRunner[]) => void): void {
    this.runnersListeners.push(listener);
  }

  /** Waits for the start lock, creates what the board needs, registers this runner. The lock is kept until `opened`. */
  async join(): Promise<void> {
    const client = new Client(pgClientConfig(this.store, 'agent-manager runner'));
    await client.connect();
    try {
      await client.query('SELECT pg_advisory_lock(hashtextextended($1, 1))', [this.lockKey]);
      const schema = this.store.schema;
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${schema}.am_writer (
          id integer PRIMARY KEY CHECK (id = 1),
          host varchar NOT NULL,
          pid integer NOT NULL,
          url varchar,
          started_at varchar NOT NULL,
          last_event_id bigint NOT NULL DEFAULT 0
        )`,
      );
      await client.query(
        `ALTER TABLE ${schema}.am_writer ADD COLUMN IF NOT EXISTS generation bigint NOT NULL DEFAULT 0`,
      );
      await client.query(
        `INSERT INTO ${schema}.am_writer (id, host, pid, url, started_at) VALUES (1, $1, $2, NULL, $3) ON CONFLICT (id) DO NOTHING`,
        [os.hostname(), process.pid, new Date().toISOString()],
      );
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${schema}.am_runner (
          id varchar PRIMARY KEY,
          host varchar NOT NULL,
          person_name varchar NOT NULL,
          person_email varchar,
          pid integer NOT NULL,
          url varchar,
          started_at timestamptz NOT NULL,
          heartbeat_at timestamptz NOT NULL,
          stopped_at timestamptz
        )`,
      );
      // Since when this runner leads the board (null: it does not, or has not since it started).
      await client.query(`ALTER TABLE ${schema}.am_runner ADD COLUMN IF NOT EXISTS leader_since timestamptz`);
      await client.query(
        `INSERT INTO ${schema}.am_runner (id, host, person_name, person_email, pid, url, started_at, heartbeat_at, stopped_at)
         VALUES ($1, $2, $3, $4, $5, NULL, now(), now(), NULL)
         ON CONFLICT (id) DO UPDATE SET host = EXCLUDED.host, person_name = EXCLUDED.person_name, person_email = EXCLUDED.person_email,
           pid = EXCLUDED.pid, url = NULL, started_at = now(), heartbeat_at = now(), stopped_at = NULL, leader_since = NULL`,
        [this.runnerId, os.hostname(), this.person.name, this.person.email, process.pid],
      );
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    client.on('error', (err) => this.onLost(err));
    this.client = client;
  }

  /** Listening: records the URL, lets the next runner start, and begins the heartbeat. */
  async opened(url: string): Promise<void> {
    const client = this.client;
    if (!client) {
      return;
    }
    await client.query(`UPDATE ${this.store.schema}.am_runner SET url = $2 WHERE id = $1`, [this.runnerId, url]);
    await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 1))', [this.lockKey]);
    await this.beat();
    this.timer = setInterval(() => void this.beat(), BOARD_LEASE_MS / BEATS_PER_LEASE);
    this.timer.unref();
    whenRunnerUnknown(() => this.readRunnersSoon());
  }

  /**
   * A runner that joined since the last heartbeat was asked for: the runners are read again
   * (at most once a second), so its Requirements name it at once rather than at the next beat.
   */
  private readRunnersSoon(): void {
    const now = Date.now();
    if (this.client === undefined || now - this.lastExtraRead < 1000) {
      return;
    }
    this.lastExtraRead = now;
    void this.runners()
      .then(recordRunners)
      .catch(() => undefined);
  }

  /** Every runner of the board, online first, then by start. */
  async runners(): Promise<BoardRunner[]> {
    const client = this.client;
    if (!client) {
      return [];
    }
    const { rows } = await client.query<{
      id: string;
      host: string;
      person_name: string;
      person_email: string | null;
      pid: number;
      url: string | null;
      started_at: Date;
      online: boolean;
      leader: boolean;
    }>(
      // A leader killed without leaving keeps its leader_since; it is offline, and whoever took
      // the lock after it has a later one.
      `WITH r AS (
         SELECT *, (stopped_at IS NULL AND heartbeat_at > now() - make_interval(secs => $1)) AS online FROM ${this.store.schema}.am_runner
       )
       SELECT id, host, person_name, person_email, pid, url, started_at, online,
         (online AND leader_since IS NOT NULL AND leader_since = (SELECT max(leader_since) FROM r WHERE online)) AS leader
       FROM r ORDER BY online DESC, started_at`,
      [BOARD_LEASE_MS / 1000],
    );
    return rows.map((r) => ({
      host: r.host,
      id: r.id,
      leader: r.leader,
      online: r.online,
      personEmail: r.person_email,
      personName: r.person_name,
      pid: r.pid,
      startedAt: new Date(r.started_at).toISOString(),
      url: r.url,
    }));
  }

  /** Leaves the board: the row says stopped (offline at once), the session's locks end with it. */
  async leave(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.beating;
    const client = this.client;
    this.client = undefined;
    this.leader = false;
    whenRunnerUnknown(null);
    if (client) {
      await client
        .query(
          `UPDATE ${this.store.schema}.am_runner SET stopped_at = now(), url = NULL, leader_since = NULL WHERE id = $1`,
          [this.runnerId],
        )
        .catch(() => undefined);
      await client.end().catch(() => undefined);
    }
  }

  /** One heartbeat, and an attempt at leadership when this runner does not hold it. */
  private beat(): Promise<void> {
    this.beating ??= (async () => {
      const client = this.client;
      if (!client) {
        return;
      }
      try {
        await client.query(
          `UPDATE ${this.store.schema}.am_runner SET heartbeat_at = now(), stopped_at = NULL WHERE id = $1`,
          [this.runnerId],
        );
        if (!this.leader) {
          const { rows } = await client.query<{ locked: boolean }>(
            'SELECT pg_try_advisory_lock(hashtextextended($1, 2)) AS locked',
            [this.lockKey],
          );
          this.leader = rows[0]?.locked === true;
          if (this.leader) {
            await client.query(`UPDATE ${this.store.schema}.am_runner SET leader_since = now() WHERE id = $1`, [
              this.runnerId,
            ]);
            for (const listener of this.leadershipListeners) {
              listener();
            }
          }
        }
        const runners = await this.runners();
        recordRunners(runners);
        for (const listener of this.runnersListeners) {
          listener(runners);
        }
      } catch (err) {
        // The session may be gone, and with it the leadership: nobody here leads until it is back.
        this.leader = false;
        this.onLost(err as Error);
      }
    })().finally(() => {
      this.beating = null;
    });
    return this.beating;
  }
}

/**
 * Whether this process runs the once-per-board jobs (the GitHub reconciler's ticks, retention,
 * timers' firing, the model catalog's refresh) now: always off a board; on one, while it leads.
 */
export function leadsJobs(runtime: { board?: PostgresBoard }): boolean {
  return runtime.board === undefined || runtime.board.leads;
}

/** The channel a board's commits NOTIFY with their last event id (its schema's name: a valid identifier). */
export function boardChannel(schema: string): string {
  return schema;
}
