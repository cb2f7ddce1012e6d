import * as path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { type Json } from '../support/http';
import { ManagerProcess, ROOT, Sandbox, makeSandbox, startManager } from '../support/manager-process';
import { rng } from '../support/random';
import { until } from '../support/wait';
import { ok } from '../support/api';
import { checkInvariants } from './invariants';

const AGENT = path.join(ROOT, 'test', 'fixtures', 'agents', 'scripted-agent.js');
const ROUNDS = Number(process.env.FAULT_ROUNDS ?? 6);
const DEPENDENCY_TRIGGER = 'requirement.dependency';

jest.setTimeout(15 * 60_000);

/**
 * This wave's mechanisms under kill -9 (issue 20): a dependency's wake-up (the confirm that
 * meets it, the trigger that tells the dependent) and an owner's MCP tool call in flight. After
 * each crash and restart: what was acknowledged is kept, the dependent is told exactly once,
 * the MCP server (which outlives the manager) answers an error instead of hanging and works
 * again against the restarted manager, and the invariants of docs/architecture.md#invariants hold.
 */
describe('kill -9 during this wave’s work, then restart', () => {
  const seed = Number(process.env.FAULT_SEED ?? Date.now() % 1_000_000);
  const random = rng(seed);
  let sandbox: Sandbox;
  let manager: ManagerProcess;

  const start = async () => {
    manager = await startManager({
      args: ['--log-level', 'warn'],
      env: {
        CODE_FACTORY_CLAUDE_EXECUTABLE: AGENT,
        CODE_FACTORY_CODEX_EXECUTABLE: AGENT,
        // An agent sees only the variables it is let see (issue 45).
        CODE_FACTORY_AGENT_ENVIRONMENT_PASS: 'SCRIPTED_AGENT_DELAY_MS',
        SCRIPTED_AGENT_DELAY_MS: '0',
      },
      sandbox,
    });
  };
  const get = async (id: string) => await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
  const runs = async (id: string): Promise<Json[]> =>
    (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: id, limit: 100 } } }))).items;
  const told = async (id: string) =>
    (
      await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id }, query: { limit: 200 } } }))
    ).items.filter((m) => m.triggerId === DEPENDENCY_TRIGGER);
  const settled = (id: string, status: string) =>
    until(`${id} ${status} with no run active`, async () => {
      const [requirement, all] = await Promise.all([get(id), runs(id)]);
      return (requirement.status === status && all.length > 0 && all.every((r) => r.status !== 'running')) || undefined;
    });
  const crashAfter = async (ms: number) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    await manager.kill9();
  };
  const expectInvariants = async (label: string) =>
    expect({ label, problems: await checkInvariants(manager.dataDirectory()) }).toEqual({ label, problems: [] });

  beforeAll(async () => {
    sandbox = makeSandbox();
    await start();
  });

  afterAll(async () => {
    await manager?.stop().catch(() => undefined);
    sandbox?.cleanup();
  });

  it(`tells a dependent exactly once when a crash lands in its dependency's confirm (${ROUNDS} rounds, seed ${seed})`, async () => {
    const outcomes = { acknowledged: 0, lost: 0, toldBeforeCrash: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const dependency = (
        await ok(manager.api.POST('/api/requirements', { body: { provider: 'codex', title: `dependency ${round}` } }))
      ).id;
      const dependent = (
        await ok(manager.api.POST('/api/requirements', { body: { provider: 'codex', title: `dependent ${round}` } }))
      ).id;
      expect(
        (
          await manager.api.POST('/api/requirements/{id}/start', {
            params: { path: { id: dependency } },
            body: { message: 'work' },
          })
        ).status,
      ).toBe(202);
      expect(
        (
          await manager.api.POST('/api/requirements/{id}/start', {
            params: { path: { id: dependent } },
            body: { message: 'work' },
          })
        ).status,
      ).toBe(202);
      await settled(dependency, 'waiting_confirmation');
      await settled(dependent, 'waiting_confirmation');
      expect(
        (
          await manager.api.PUT('/api/requirements/{id}/dependencies', {
            params: { path: { id: dependent } },
            body: { dependsOn: [{ requirementId: dependency, until: 'done' }] },
          })
        ).status,
      ).toBe(200);

      // The confirm, and the crash at a random point around it (before, during or after the wake-up).
      const confirm = manager.api
        .POST('/api/requirements/{id}/confirm', { params: { path: { id: dependency } } })
        .catch(() => ({ status: 0 }));
      await crashAfter(Math.floor(random() * 120));
      const acknowledged = (await confirm).status < 300 && (await confirm).status > 0;
      await start();
      await expectInvariants(`round ${round}, after the restart`);
      outcomes[acknowledged ? 'acknowledged' : 'lost']++;
      outcomes.toldBeforeCrash += (await told(dependent)).length;
      if ((await get(dependency)).status !== 'done') {
        expect(acknowledged).toBe(false); // an acknowledged confirm is never lost
        expect(
          (await manager.api.POST('/api/requirements/{id}/confirm', { params: { path: { id: dependency } } })).status,
        ).toBeLessThan(300);
      }
      // Told once (the trigger's receipt), whether the crash came before or after it was delivered.
      await until(`round ${round}: the dependent told`, async () =>
        (await told(dependent)).length > 0 ? true : undefined,
      );
      await settled(dependent, 'waiting_confirmation');
      expect((await told(dependent)).length).toBe(1);
      // A restart later does not tell it again.
      await manager.stop();
      await start();
      expect((await told(dependent)).length).toBe(1);
    }
    // Where the crashes landed (the seed reproduces them).
    console.log(`dependency rounds: ${JSON.stringify(outcomes)}`);
  });

  it('an owner MCP tool call in flight when the manager dies answers an error, and works again after the restart', async () => {
    const transport = new StdioClientTransport({
      args: [path.join(ROOT, 'bin', 'agent-manager.js'), 'mcp', '--workspace', sandbox.workspace],
      command: process.execPath,
      env: { CODE_FACTORY_HOME: sandbox.home, PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'fault-owner', version: '1.0.0' });
    await client.connect(transport);
    try {
      const titles: string[] = [];
      const outcomes = { answered: 0, failed: 0 };
      for (let round = 0; round < ROUNDS; round++) {
        const title = `made through MCP ${round}`;
        titles.push(title);
        // Calls going out one after another; the crash lands among them (some answered, some in flight).
        const calls = [0, 1, 2, 3, 4, 5].map(async (k) => {
          await new Promise((resolve) => setTimeout(resolve, k * 30));
          return (await client.callTool({
            arguments: { description: `call ${k}`, provider: 'codex', title: `${title} #${k}` },
            name: 'create_requirement',
          })) as CallToolResult;
        });
        await crashAfter(40 + Math.floor(random() * 160));
        const results = await Promise.all(calls);
        const created = results
          .filter((r) => !r.isError)
          .map((r) => JSON.parse(r.content.map((b) => (b.type === 'text' ? b.text : '')).join('')) as { id: string });
        outcomes.answered += created.length;
        outcomes.failed += results.length - created.length;
        for (const failed of results.filter((r) => r.isError)) {
          // An error a person can act on, not a hang or a stack.
          expect(failed.content.map((b) => (b.type === 'text' ? b.text : '')).join('')).toMatch(
            /Agent Manager|not running|ECONNREFUSED|fetch failed|connect/i,
          );
        }
        await start();
        await expectInvariants(`MCP round ${round}`);
        // Every creation the tool acknowledged is in the store, once.
        for (const { id } of created) {
          expect((await manager.api.GET('/api/requirements/{id}', { params: { path: { id } } })).status).toBe(200);
        }
        const listed = (
          await ok(manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))
        ).items.filter((r) => r.title.startsWith(`${title} #`));
        expect(new Set(listed.map((r) => r.title)).size).toBe(listed.length);
        expect(listed.length).toBeGreaterThanOrEqual(created.length);
        // The same MCP server, against the restarted manager (a new port: found again through the lock).
        const after = (await client.callTool({ arguments: {}, name: 'list_requirements' })) as CallToolResult;
        expect(after.isError ?? false).toBe(false);
      }
      console.log(`MCP calls around the crashes: ${JSON.stringify(outcomes)}`);
    } finally {
      await client.close();
    }
  });
});
