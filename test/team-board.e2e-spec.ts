import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { boardNameFromOrigin, boardSchema } from '@server/core/board/board-name';

import { launchBrowser, screenshot } from './support/browser';
import { onPostgres } from './support/db-snapshot';
import { ok } from './support/api';
import { git, makeBareOrigin } from './support/git-repo';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { dropSchemasSync, schemaQuery } from './support/postgres';
import { SseConnection, connectSse } from './support/sse-client';
import { until } from './support/wait';

/**
 * Team mode (issue 29 §1, §3): two people's managers, each with its own home and its own clone of
 * one bare origin, join the board that origin names (`--board` without a name) on one PostgreSQL
 * server. Runs with TEST_DATABASE_URL (`npm run test:postgres`).
 */
(onPostgres() ? describe : describe.skip)('team mode: two runners on one board', () => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'am-e2e-board-'));
  const origin = path.join(base, 'origin.git');
  const schema = boardSchema(boardNameFromOrigin(origin));
  let sandboxA: Sandbox;
  let sandboxB: Sandbox;
  let a: ManagerProcess;
  let b: ManagerProcess;
  const open: SseConnection[] = [];

  const clone = (sandbox: Sandbox) => {
    fs.rmSync(sandbox.workspace, { force: true, recursive: true });
    git(base, 'clone', '-q', origin, sandbox.workspace);
  };
  const startRunner = (sandbox: Sandbox, person: string) =>
    startManager({ args: ['--board', '--person-name', person], sandbox });
  const sse = async (manager: ManagerProcess, headers: Record<string, string> = {}) => {
    const connection = await connectSse(`${manager.origin}/api/events`, headers);
    open.push(connection);
    return connection;
  };
  const boardQuery = <T>(sql: string, params: unknown[] = []): Promise<T[]> => schemaQuery<T>(schema, sql, params);
  const create = (manager: ManagerProcess, title: string) =>
    ok(manager.api.POST('/api/requirements', { body: { description: 'd', provider: 'codex', title } }), 201);
  const get = (manager: ManagerProcess, id: string) =>
    ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));

  beforeAll(async () => {
    makeBareOrigin(base);
    sandboxA = makeSandbox();
    sandboxB = makeSandbox();
    clone(sandboxA);
    clone(sandboxB);
    // Started at once: the board's start lock lets one create the schema and migrate, then the other.
    [a, b] = await Promise.all([startRunner(sandboxA, 'Ada'), startRunner(sandboxB, 'Bob')]);
  });

  afterEach(() => open.splice(0).forEach((c) => c.close()));

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    sandboxA?.cleanup();
    sandboxB?.cleanup();
    dropSchemasSync([schema]);
    fs.rmSync(base, { force: true, recursive: true });
  });

  it('meets on the board its origin names, in one schema, each runner registered with its person and host', async () => {
    expect(a.stdout()).toContain(`board ${boardNameFromOrigin(origin)}`);
    const runners = await boardQuery<{ person_name: string; host: string; url: string; stopped_at: unknown }>(
      'SELECT person_name, host, url, stopped_at FROM am_runner ORDER BY person_name',
    );
    expect(runners).toEqual([
      { host: os.hostname(), person_name: 'Ada', stopped_at: null, url: a.origin },
      { host: os.hostname(), person_name: 'Bob', stopped_at: null, url: b.origin },
    ]);
    // Neither clone's own workspace schema was used.
    expect(
      await boardQuery<{ n: number }>(
        `SELECT COUNT(*)::int AS n FROM information_schema.schemata WHERE schema_name = $1`,
        [`am_${path.basename(a.dataDirectory())}`],
      ),
    ).toEqual([{ n: 0 }]);
  });

  it("shows a Requirement created on A live on B's SSE and API, under the same event id", async () => {
    const [onA, onB] = await Promise.all([sse(a), sse(b)]);
    const created = await create(a, 'made on A');
    const [fromA, fromB] = await Promise.all(
      [onA, onB].map((c) =>
        c.waitUntil(
          (e) => e.event === 'requirement.created' && (e.data.payload.requirement as { id: string }).id === created.id,
          'created on A',
        ),
      ),
    );
    expect(fromB.id).toBe(fromA.id);
    expect(fromB.data).toEqual(fromA.data);
    // Ada's name on the event, on both runners.
    expect(fromB.data.actor).toMatchObject({ kind: 'human', name: 'Ada' });
    expect((await get(b, created.id)).title).toBe('made on A');
  });

  it('keeps one gap-free order of event ids while both runners write at once, and every stream sees all of it', async () => {
    const [onA, onB] = await Promise.all([sse(a), sse(b)]);
    const [{ top: before }] = await boardQuery<{ top: number }>(
      'SELECT COALESCE(MAX(id), 0)::int AS top FROM manager_event',
    );
    const made = await Promise.all(
      Array.from({ length: 24 }, (_, i) => create(i % 2 === 0 ? a : b, `concurrent ${i}`)),
    );
    const ids = await boardQuery<{ id: number; requirement_id: string | null }>(
      'SELECT id::int AS id, requirement_id FROM manager_event WHERE id > $1 ORDER BY id',
      [before],
    );
    // One id each, consecutive: the batches of both runners committed one after another.
    expect(ids.map((r) => r.id)).toEqual(Array.from({ length: ids.length }, (_, i) => before + 1 + i));
    // (The leader may write a board.runners_changed among them: no Requirement.)
    expect(new Set(ids.map((r) => r.requirement_id).filter((id) => id !== null))).toEqual(
      new Set(made.map((r) => r.id)),
    );
    const top = ids[ids.length - 1].id;
    for (const stream of [onA, onB]) {
      await stream.waitUntil((e) => e.id === top, `event ${top}`);
      expect(stream.events.map((e) => e.id).filter((id) => id > before && id <= top)).toEqual(ids.map((r) => r.id));
    }
  });

  it("replays A's events on B by id after a reconnect, exactly as A's own stream has them", async () => {
    const onA = await sse(a);
    const first = await create(a, 'replayed 1');
    const firstEvent = await onA.waitUntil(
      (e) => e.event === 'requirement.created' && (e.data.payload.requirement as { id: string }).id === first.id,
      'first',
    );
    await create(a, 'replayed 2');
    await create(b, 'replayed 3');
    const last = await create(a, 'replayed 4');
    const lastEvent = await onA.waitUntil(
      (e) => e.event === 'requirement.created' && (e.data.payload.requirement as { id: string }).id === last.id,
      'last',
    );
    const replay = await sse(b, { 'Last-Event-ID': String(firstEvent.id) });
    await replay.waitUntil((e) => e.id === lastEvent.id, 'the replay reaches the last');
    const expected = onA.events.filter((e) => e.id > firstEvent.id && e.id <= lastEvent.id).map((e) => [e.id, e.data]);
    expect(replay.events.filter((e) => e.id <= lastEvent.id).map((e) => [e.id, e.data])).toEqual(expected);
  });

  it('runs a Requirement on the runner that started it; a stop and a reply sent to B reach it there', async () => {
    const requirement = await create(a, 'runs on A');
    expect(requirement.runner).toBeNull();
    await ok(
      a.api.POST('/api/requirements/{id}/start', { body: { message: 'go' }, params: { path: { id: requirement.id } } }),
      202,
    );
    const onA = await get(a, requirement.id);
    expect(onA.session.state).toBe('running');
    expect(onA.runner).toMatchObject({ host: os.hostname(), online: true, person: 'Ada' });
    // B learns of A's runner at its next heartbeat (a third of a lease period at most).
    const onB = await until('B shows A as its runner', async () => {
      const seen = await get(b, requirement.id);
      return seen.runner?.online ? seen : undefined;
    });
    expect(onB.runner).toEqual(onA.runner);
    const runsOf = async () =>
      (await ok(a.api.GET('/api/runs', { params: { query: { limit: 10, requirementId: requirement.id } } }))).items;
    const [first] = await runsOf();

    // Starting it again or cancelling it from B: refused, naming whose runner it is.
    const start = await b.api.POST('/api/requirements/{id}/start', {
      body: { message: 'from B' },
      params: { path: { id: requirement.id } },
    });
    expect(start.status).toBe(409);
    expect(start.error?.code).toBe('runs_on_other_runner');
    expect(start.error?.message).toContain("Ada's runner");
    const cancel = await b.api.POST('/api/requirements/{id}/cancel', { params: { path: { id: requirement.id } } });
    expect(cancel.status).toBe(409);
    expect(cancel.error?.code).toBe('runs_on_other_runner');

    // A stop sent to B is carried to A, which ends its run; B's stream shows the end.
    const onBStream = await sse(b);
    const stop = await ok(
      b.api.POST('/api/requirements/{id}/interrupt', {
        body: { mode: 'stop' },
        params: { path: { id: requirement.id } },
      }),
      202,
    );
    expect(stop).toMatchObject({ accepted: true, runId: first.id });
    await onBStream.waitUntil(
      (e) => e.event === 'run.cancelled' && e.data.runId === first.id,
      "A's run ended by B's stop",
    );
    const requested = onBStream.events.find((e) => e.event === 'run.interrupt_requested');
    expect(requested?.data.actor).toMatchObject({ name: 'Bob' });
    expect((await get(a, requirement.id)).session.pausedAt).not.toBeNull();

    // Bob's reply, sent to B, lands in the conversation and wakes the session on A (a person's reply resumes a stop).
    const replied = await ok(
      b.api.POST('/api/requirements/{id}/reply', {
        body: { message: 'a word from Bob' },
        params: { path: { id: requirement.id } },
      }),
      202,
    );
    expect(replied.queued).toBe(true);
    const second = await until('a second run, on A', async () => {
      const runs = await runsOf();
      return runs.length === 2 && runs[0].status === 'running' ? runs[0] : undefined;
    });
    expect(second.id).not.toBe(first.id);
    const afterReply = await get(a, requirement.id);
    expect(afterReply.session.state).toBe('running');
    expect(afterReply.runner?.id).toBe(onA.runner?.id);
    const messages = await ok(
      a.api.GET('/api/requirements/{id}/messages', { params: { path: { id: requirement.id }, query: { limit: 50 } } }),
    );
    expect(messages.items.find((m) => m.body === 'a word from Bob')).toMatchObject({
      author: 'human',
      authorName: 'Bob',
    });
    // Exactly those two runs, both A's: nothing of it ever started on B.
    expect(
      await boardQuery<{ n: number }>('SELECT COUNT(*)::int AS n FROM agent_run WHERE requirement_id = $1', [
        requirement.id,
      ]),
    ).toEqual([{ n: 2 }]);
  });

  it("leaves A's running run alone when B restarts (B reconciles only its own), and shows a stopped runner offline at once", async () => {
    const requirement = await create(a, 'still running on A');
    await ok(
      a.api.POST('/api/requirements/{id}/start', { body: { message: 'go' }, params: { path: { id: requirement.id } } }),
      202,
    );
    expect(await b.stop()).toBe(0);
    const [bob] = await boardQuery<{ stopped_at: unknown }>(
      "SELECT stopped_at FROM am_runner WHERE person_name = 'Bob'",
    );
    expect(bob?.stopped_at).not.toBeNull();
    b = await startRunner(sandboxB, 'Bob');
    const seen = await get(b, requirement.id);
    expect(seen.session.state).toBe('running');
    const runs = await ok(a.api.GET('/api/runs', { params: { query: { limit: 10, requirementId: requirement.id } } }));
    expect(runs.items.map((r) => r.status)).toEqual(['running']);
  });

  it('starts a Requirement raced from both runners once: one run, on the runner that won', async () => {
    const requirement = await create(a, 'raced');
    const start = (manager: ManagerProcess, message: string) =>
      manager.api.POST('/api/requirements/{id}/start', { body: { message }, params: { path: { id: requirement.id } } });
    const [fromA, fromB] = await Promise.all([start(a, 'from A'), start(b, 'from B')]);
    // Exactly one is accepted; the other finds it running (here, or on the winner's runner).
    expect([fromA.status, fromB.status].sort()).toEqual([202, 409]);
    const loser = fromA.status === 409 ? fromA : fromB;
    expect(['runs_on_other_runner', 'run_active']).toContain(loser.error?.code);
    const winner = fromA.status === 202 ? 'Ada' : 'Bob';
    expect((await get(a, requirement.id)).runner?.person).toBe(winner);
    expect(
      await boardQuery<{ n: number }>('SELECT COUNT(*)::int AS n FROM agent_run WHERE requirement_id = $1', [
        requirement.id,
      ]),
    ).toEqual([{ n: 1 }]);
  });

  /** The runner that leads the board now, as the runners' table says (the online one that took the lock last). */
  const leader = async (): Promise<{
    leader: ManagerProcess;
    follower: ManagerProcess;
    leaderSandbox: Sandbox;
    person: string;
  }> => {
    const [row] = await boardQuery<{ person_name: string }>(
      `SELECT person_name FROM am_runner WHERE stopped_at IS NULL AND heartbeat_at > now() - interval '15 seconds' AND leader_since IS NOT NULL
       ORDER BY leader_since DESC LIMIT 1`,
    );
    expect(row).toBeDefined();
    return row.person_name === 'Ada'
      ? { follower: b, leader: a, leaderSandbox: sandboxA, person: 'Ada' }
      : { follower: a, leader: b, leaderSandbox: sandboxB, person: 'Bob' };
  };

  it('fires a timer made on the runner that does not lead once, from the leader, into the conversation of the runner that runs it', async () => {
    const { follower } = await leader();
    const requirement = await create(follower, 'timed');
    await ok(
      follower.api.POST('/api/requirements/{id}/start', {
        body: { message: 'go' },
        params: { path: { id: requirement.id } },
      }),
      202,
    );
    const timer = await ok(
      follower.api.POST('/api/requirements/{id}/timers', {
        body: { description: 'look again', intervalSeconds: 60, schedule: 'once' },
        params: { path: { id: requirement.id } },
      }),
      201,
    );
    // Due now, as a minute later would make it; the leader is woken by the next timer made on the follower.
    await boardQuery('UPDATE agent_timer SET next_fire_at = $2 WHERE id = $1', [
      timer.id,
      new Date(Date.now() - 1000).toISOString(),
    ]);
    const other = await ok(
      follower.api.POST('/api/requirements/{id}/timers', {
        body: { description: 'later', intervalSeconds: 3600, schedule: 'once' },
        params: { path: { id: requirement.id } },
      }),
      201,
    );
    const fired = () =>
      boardQuery<{ id: number }>(
        "SELECT id::int AS id FROM manager_event WHERE type = 'timer.fired' AND requirement_id = $1",
        [requirement.id],
      );
    await until('the timer fired', async () => (await fired()).length > 0);
    // A follower's periodic check (5 s) and the leader's next pass come and go: still once.
    await new Promise((r) => setTimeout(r, 6_000));
    expect(await fired()).toHaveLength(1);
    const timers = await ok(
      follower.api.GET('/api/requirements/{id}/timers', { params: { path: { id: requirement.id } } }),
    );
    expect(timers.items.find((t) => t.id === timer.id)?.status).toBe('completed');
    expect(timers.items.find((t) => t.id === other.id)?.status).toBe('active');
    const messages = await ok(
      follower.api.GET('/api/requirements/{id}/messages', {
        params: { path: { id: requirement.id }, query: { limit: 50 } },
      }),
    );
    expect(messages.items.filter((m) => m.body.startsWith('Timer fired.'))).toHaveLength(1);
    // Its run, still going on the follower, is the only one: the leader queued the message, it did not run it.
    expect(
      await boardQuery<{ n: number }>('SELECT COUNT(*)::int AS n FROM agent_run WHERE requirement_id = $1', [
        requirement.id,
      ]),
    ).toEqual([{ n: 1 }]);
  });

  it('kill -9 of the leader during a run: the other runner shows it offline within a lease, leads within two, claims nothing; the restart reconciles', async () => {
    const { follower, leader: doomed, leaderSandbox, person } = await leader();
    const requirement = await create(doomed, 'running when its runner dies');
    await ok(
      doomed.api.POST('/api/requirements/{id}/start', {
        body: { message: 'go' },
        params: { path: { id: requirement.id } },
      }),
      202,
    );
    await until(
      'the follower sees its runner',
      async () => (await get(follower, requirement.id)).runner?.online === true,
    );
    const killedAt = Date.now();
    await doomed.kill9();
    const offline = await until(
      'the runner shown offline',
      async () => {
        const seen = await get(follower, requirement.id);
        return seen.runner?.online === false ? seen : undefined;
      },
      25_000,
    );
    const offlineAfter = Date.now() - killedAt;
    // One lease period (15 s) plus the follower's heartbeat that reads it (5 s).
    expect(offlineAfter).toBeLessThan(20_000 + 2_000);
    // Not failed: its run is on a machine the board cannot see.
    expect(offline.session.state).toBe('running');
    expect(offline.runner?.person).toBe(person);
    await until('the follower leads', async () => (await leader()).leader === follower, 30_000);
    expect(Date.now() - killedAt).toBeLessThan(2 * 15_000);
    // The follower neither reconciled nor restarted it.
    const runs = () =>
      boardQuery<{ status: string }>('SELECT status FROM agent_run WHERE requirement_id = $1', [requirement.id]);
    expect(await runs()).toEqual([{ status: 'running' }]);
    const reply = await follower.api.POST('/api/requirements/{id}/start', {
      body: { message: 'take it' },
      params: { path: { id: requirement.id } },
    });
    expect(reply.status).toBe(409);
    expect(reply.error?.message).toContain('offline');

    // Back: it reconciles its own orphan, as a single manager does after a crash.
    const back = await startRunner(leaderSandbox, person);
    if (doomed === a) {
      a = back;
    } else {
      b = back;
    }
    expect(await runs()).toEqual([{ status: 'failed' }]);
    const seen = await until('the follower sees it back', async () => {
      const r = await get(follower, requirement.id);
      return r.runner?.online && r.session.state === 'failed' ? r : undefined;
    });
    expect(seen.status).toBe('waiting_confirmation');
  });

  it("shows a stopped runner's Requirement as 'runner offline' on B's board, and B's dashboard moves it to Bob's runner, where it goes on", async () => {
    const requirement = await create(a, 'moved in the dashboard');
    await ok(
      a.api.POST('/api/requirements/{id}/start', { body: { message: 'go' }, params: { path: { id: requirement.id } } }),
      202,
    );
    await until('B sees it on Ada', async () => (await get(b, requirement.id)).runner?.online === true);
    const browser = await launchBrowser({ locale: 'en' });
    try {
      const { page } = browser;
      await page.goto(`${b.origin}/?token=${b.token}`);
      await page.waitForURL(`${b.origin}/requirements`);
      const badge = page.locator(`a.card[data-requirement-id="${requirement.id}"]`).getByTestId('card-runner');
      await until('the card says on Ada', async () =>
        (await badge.textContent())?.includes('on Ada') ? true : undefined,
      );
      // Ada's manager stops (its run is cut short: the input stays pending) and says so on the board.
      expect(await a.stop()).toBe(0);
      // Live, without a reload: the leader tells every page the runners changed (board.runners_changed).
      await until(
        'the card says runner offline',
        async () => ((await badge.textContent())?.includes('runner offline (Ada)') ? true : undefined),
        30_000,
      );
      await screenshot(page, path.join('..', 'team-board', 'runner-offline-card'));

      // On a wide screen the occasional actions sit in the row (the ⋯ menu is a phone's).
      await page.goto(`${b.origin}/requirements/${requirement.id}`);
      page.once('dialog', (dialog) => void dialog.accept());
      await page.getByTestId('move-here').click();
      const moved = await until('it runs on Bob', async () => {
        const seen = await get(b, requirement.id);
        return seen.runner?.person === 'Bob' && seen.session.state === 'running' ? seen : undefined;
      });
      expect(moved.runner).toMatchObject({ online: true, person: 'Bob' });
      // The conversation says where it came from and that its branch was never pushed (A stopped mid-run).
      const notice = page.locator('article.message').filter({ hasText: 'Moved from Ada’s runner' });
      await notice.waitFor();
      await expect(notice.textContent()).resolves.toContain('could not be fetched');
      await screenshot(page, path.join('..', 'team-board', 'moved-notice'));
      // No Move offered once it runs here.
      await expect(page.getByTestId('move-here').count()).resolves.toBe(0);
    } finally {
      await browser.close();
    }
    const runs = await ok(b.api.GET('/api/runs', { params: { query: { limit: 10, requirementId: requirement.id } } }));
    expect(runs.items.map((r) => r.status)).toEqual(['running', 'cancelled']);
  });
});
