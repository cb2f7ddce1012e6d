import * as fs from 'node:fs';
import * as path from 'node:path';

import { type Json } from '../support/http';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from '../support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from '../support/model-stub';
import { rng } from '../support/random';
import { until } from '../support/wait';
import { ok } from '../support/api';
import { checkInvariants } from './invariants';

const CLAUDE = REAL_AGENT_CLIS.find((cli) => cli.provider === 'claude-code')!;
const ROUNDS = Number(process.env.FAULT_ROUNDS ?? 4);
/** A tool job that never ends by itself: the run it is in ends only by being stopped (or killed). */
const LONG_JOB = `node -e "setInterval(() => {}, 1000)" am-budget-crash-sleeper`;

jest.setTimeout(15 * 60_000);

/**
 * kill -9 of the manager while a budget pause happens (issue 20): the real Claude Code CLI, the
 * model stub reporting 101 tokens a response, a budget of 250 crossed by the third response,
 * and the crash at a random moment from just before that response to after the pause. After
 * each restart: no run is left running, the budget notice is there at most once, the store's
 * invariants hold, and raising the budget (or a person's start) carries the work on to the end.
 */
describe('kill -9 during a budget pause, then restart', () => {
  const seed = Number(process.env.FAULT_SEED ?? Date.now() % 1_000_000);
  const random = rng(seed);
  let sandbox: Sandbox;
  let stub: ModelStub;
  let agentEnv: Record<string, string>;
  let manager: ManagerProcess;

  const start = async () => {
    manager = await startManager({
      args: ['--log-level', 'warn'],
      env: {
        ...agentEnv,
        CODE_FACTORY_CLAUDE_EXECUTABLE: CLAUDE.executable,
        CODE_FACTORY_CODEX_EXECUTABLE: CLAUDE.executable,
        GH_TOKEN: '',
        GITHUB_TOKEN: '',
      },
      sandbox,
    });
  };
  const get = async (id: string) => await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
  const runs = async (id: string): Promise<Json[]> =>
    (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: id, limit: 100 } } }))).items;
  const notices = async (id: string) =>
    (
      await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id }, query: { limit: 200 } } }))
    ).items.filter((m) => m.author === 'system' && m.body.startsWith('Budget reached'));
  const idle = (id: string) =>
    until(
      `${id} with no run active`,
      async () => (await runs(id)).every((r) => r.status !== 'running') || undefined,
      120_000,
      200,
    );

  beforeAll(async () => {
    sandbox = makeSandbox();
    stub = await ModelStub.start();
    agentEnv = CLAUDE.env(stub, fs.mkdtempSync(path.join('/var/tmp', 'am-budget-crash-')));
    await start();
  });

  afterAll(async () => {
    await manager?.stop().catch(() => undefined);
    await stub?.close();
    sandbox?.cleanup();
  });

  it(`loses and repeats nothing across ${ROUNDS} crashes around the pause (seed ${seed})`, async () => {
    const landed = { afterPause: 0, beforePause: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const id = (
        await ok(
          manager.api.POST('/api/requirements', {
            body: { budget: { maxTokens: 250 }, provider: 'claude-code', title: `budget crash ${round}` },
          }),
        )
      ).id;
      const marker = `Budgeted work ${id}`;
      stub.scriptFor(id, [
        { shell: 'echo one' },
        { shell: 'echo two' },
        { shell: LONG_JOB },
        { text: 'Carried on after the budget was raised.' },
        { text: 'Done.' },
      ]);
      expect(
        (
          await manager.api.POST('/api/requirements/{id}/start', {
            params: { path: { id } },
            body: { message: marker },
          })
        ).status,
      ).toBe(202);
      // The third response crosses the budget; the crash lands from as it is asked for to after the pause.
      await until(
        `round ${round}: the third request`,
        async () => (stub.requests.filter((r) => r.marker === id).length >= 3 ? true : undefined),
        120_000,
        5,
      );
      // Every other round early (the pause not yet written, mostly) and late (written, mostly).
      await new Promise((resolve) =>
        setTimeout(resolve, round % 2 === 0 ? Math.floor(random() * 150) : 600 + Math.floor(random() * 600)),
      );
      const before = await get(id).catch(() => null);
      landed[before?.budgetReachedAt ? 'afterPause' : 'beforePause']++;
      await manager.kill9();
      await start();
      await idle(id);
      expect({ problems: await checkInvariants(manager.dataDirectory()), round }).toEqual({ problems: [], round });
      const after = await get(id);
      // No run survives the crash as running, and the notice is never written twice.
      expect((await runs(id)).filter((r) => r.status === 'running')).toEqual([]);
      expect((await notices(id)).length).toBeLessThanOrEqual(1);
      if (before?.budgetReachedAt) {
        // A pause committed before the crash is kept.
        expect(after.budgetReachedAt).toBe(before.budgetReachedAt);
      }
      // Raising the budget lifts a recorded pause; a person's start carries on either way.
      expect(
        (
          await manager.api.PATCH('/api/requirements/{id}', {
            params: { path: { id } },
            body: { budget: { maxTokens: 1_000_000 } },
          })
        ).status,
      ).toBe(200);
      if ((await get(id)).status !== 'waiting_confirmation' || (await runs(id)).every((r) => r.status !== 'running')) {
        const started = await manager.api.POST('/api/requirements/{id}/start', { params: { path: { id } }, body: {} });
        expect([202, 409]).toContain(started.status);
      }
      await idle(id);
      const done = await get(id);
      expect(done).toMatchObject({ budgetReachedAt: null, status: 'waiting_confirmation' });
      expect((await runs(id)).some((r) => r.status === 'succeeded')).toBe(true);
      expect((await notices(id)).length).toBeLessThanOrEqual(1);
    }
    console.log(`budget crash rounds: ${JSON.stringify(landed)}`);
  });
});
