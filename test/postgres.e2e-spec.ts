import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { onPostgres, query } from './support/db-snapshot';
import { ok } from './support/api';
import { ManagerProcess, Sandbox, makeSandbox, runLauncher, startManager } from './support/manager-process';
import { pgQuery } from './support/postgres';

/**
 * What only PostgreSQL has to prove (runs when TEST_DATABASE_URL is set, as in
 * `npm run test:postgres`): each workspace in a schema of its own, and one writer per workspace
 * across machines, which two homes on one machine stand in for (the local lock file of one home
 * cannot see the other's manager; only the advisory lock can).
 */
(onPostgres() ? describe : describe.skip)('PostgreSQL store', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess | undefined;
  const otherHome = fs.mkdtempSync(path.join(os.tmpdir(), 'am-e2e-other-home-'));

  beforeEach(() => {
    sandbox = makeSandbox();
  });

  afterEach(async () => {
    await manager?.stop();
    manager = undefined;
    sandbox.cleanup();
  });

  afterAll(() => fs.rmSync(otherHome, { force: true, recursive: true }));

  it("keeps a workspace in its own schema and refuses a second manager naming the holder's host and URL", async () => {
    // doctor reads the store start would open: a schema still to create, then one a manager holds.
    const database = async (): Promise<{ code: string; detail: string; status: string }> => {
      const doctor = await runLauncher(sandbox, ['doctor', '--json', '--port', '0', '--workspace', sandbox.workspace]);
      return (
        JSON.parse(doctor.stdout) as { checks: { id: string; code: string; detail: string; status: string }[] }
      ).checks.find((c) => c.id === 'database')!;
    };
    expect(await database()).toMatchObject({ code: 'database.pg_new', status: 'ok' });
    manager = await startManager({ sandbox });
    const held = await database();
    expect(held).toMatchObject({ code: 'database.pg_in_use', status: 'ok' });
    expect(held.detail).toMatch(
      /^PostgreSQL \d+.* schema am_[0-9a-f]{16}; a manager of this workspace is connected to it$/,
    );
    expect(held.detail).not.toMatch(/password/);
    const created = await manager.api.POST('/api/requirements', {
      body: { description: 'd', provider: 'codex', title: 'kept in its schema' },
    });
    expect(created.status).toBe(201);
    const db = path.join(manager.dataDirectory(), 'factory.sqlite');
    expect(fs.existsSync(db)).toBe(false);
    expect(await query<{ title: string }>(db, 'SELECT title FROM requirement')).toEqual([
      { title: 'kept in its schema' },
    ]);
    const schema = `am_${path.basename(manager.dataDirectory())}`;
    expect(await query<{ host: string; url: string }>(db, 'SELECT host, url FROM am_writer')).toEqual([
      { host: os.hostname(), url: manager.origin },
    ]);

    // Another machine (another home: its own lock file) on the same workspace and server.
    const refused = await runLauncher(sandbox, ['start', '--workspace', sandbox.workspace, '--port', '0'], {
      CODE_FACTORY_HOME: otherHome,
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`schema ${schema}`);
    expect(refused.stderr).toContain(`host ${os.hostname()}`);
    expect(refused.stderr).toContain(manager.origin);
    expect(refused.stderr).not.toMatch(/password/);
  });

  it('frees the workspace when its manager is killed (the lock is the session), with everything acknowledged kept', async () => {
    manager = await startManager({ sandbox });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        (
          await ok(
            manager.api.POST('/api/requirements', { body: { description: 'd', provider: 'codex', title: `r${i}` } }),
          )
        ).id,
      );
    }
    const db = path.join(manager.dataDirectory(), 'factory.sqlite');
    const [{ top }] = await query<{ top: number }>(db, 'SELECT MAX(id) AS top FROM manager_event');
    await manager.kill9();
    manager = await startManager({ sandbox: { ...sandbox, home: otherHome } });
    // Same workspace, same schema: what the first one acknowledged is there.
    const listed = await manager.api.GET('/api/requirements', { params: { query: { limit: 100 } } });
    expect((listed.data!.items as Array<{ id: string }>).map((r) => r.id).sort()).toEqual([...ids].sort());
    // Event ids go on from the high-water mark: no id is handed out twice.
    await manager.api.POST('/api/requirements', { body: { description: 'd', provider: 'codex', title: 'after' } });
    const rows = await pgQuery<{ id: number }>(db, 'SELECT id FROM manager_event WHERE id > ? ORDER BY id', [top]);
    expect(rows[0]?.id).toBe(top + 1);
    await manager.stop();
    manager = undefined;
  });
});
