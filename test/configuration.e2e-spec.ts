import * as fs from 'node:fs';
import * as path from 'node:path';

import { sendUntyped } from './support/http';
import { snapshotStore } from './support/db-snapshot';
import { ok } from './support/api';
import { startInProcess } from './support/in-process';
import { Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';

describe('GET/PATCH /api/configuration', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let configPath: string;

  const readFile = () => JSON.parse(fs.readFileSync(configPath, 'utf8')) as Record<string, unknown>;
  const logText = () => {
    const dir = path.join(manager.dataDirectory(), 'logs');
    return fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.log'))
      .map((f) => fs.readFileSync(path.join(dir, f), 'utf8'))
      .join('');
  };

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startInProcess({ sandbox });
    configPath = path.join(manager.dataDirectory(), 'config.json');
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('shows the file, what runs, and what needs a restart', async () => {
    const { data, response } = await manager.api.GET('/api/configuration');
    expect(response.status).toBe(200);
    expect(data).toMatchObject({
      path: configPath,
      restartRequired: false,
      restartRequiredFields: [],
      values: {
        allowedOrigin: null,
        cancelledRequirementRetentionDays: 7,
        databasePath: null,
        doneRequirementRetentionDays: 365,
        host: '127.0.0.1',
        logFilePath: null,
        logLevel: 'info',
        port: 4310,
        pullRequestReconcileIntervalSeconds: 60,
      },
    });
    expect(data!.effective.port).toBe(0);
  });

  it('applies live fields at once and announces the change as an event', async () => {
    const events = await connectSse(`${manager.origin}/api/events`);
    const res = await manager.api.PATCH('/api/configuration', {
      body: { doneRequirementRetentionDays: 30, logLevel: 'error', pullRequestReconcileIntervalSeconds: 0 },
    });
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({
      restartRequired: false,
      values: { doneRequirementRetentionDays: 30, logLevel: 'error', pullRequestReconcileIntervalSeconds: 0 },
    });
    expect(res.data!.effective).toMatchObject({ logLevel: 'error', pullRequestReconcileIntervalSeconds: 0 });
    expect(readFile()).toMatchObject({ doneRequirementRetentionDays: 30, logLevel: 'error' });
    const [event] = await events.waitFor(1);
    expect(event.data).toMatchObject({
      payload: { configuration: { values: { logLevel: 'error' } } },
      type: 'manager.configuration.updated',
    });
    events.close();

    // The log level is live: info lines stop at `error` and resume at `info`.
    const created = await manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'quiet' } });
    await manager.api.PATCH('/api/configuration', { body: { logLevel: 'info' } });
    const loud = await manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'loud' } });
    // The log file is written in order: once the later line is there, the earlier one would be too.
    await until('the info line of the second create', async () => logText().includes(loud.data!.id));
    expect(logText()).not.toContain(created.data!.id);
  });

  it('persists restart-only fields and lists them until a restart', async () => {
    const res = await manager.api.PATCH('/api/configuration', {
      body: { allowedOrigin: 'http://localhost:4200', port: 4999 },
    });
    expect(res.status).toBe(200);
    expect(res.data!.restartRequired).toBe(true);
    expect(res.data!.restartRequiredFields.sort()).toEqual(['allowedOrigin', 'port']);
    expect(res.data!.effective).toMatchObject({ allowedOrigin: null, port: 0 });
    expect(readFile()).toMatchObject({ allowedOrigin: 'http://localhost:4200', port: 4999 });
    const back = await manager.api.PATCH('/api/configuration', { body: { allowedOrigin: null, port: 4310 } });
    expect(back.data!.restartRequiredFields).toEqual([]);
  });

  it.each([
    ['an unknown field', { colour: 'blue' }],
    ['a wrong type', { port: '4310' }],
    ['an out-of-range port', { port: 70000 }],
    ['an interval over the limit', { pullRequestReconcileIntervalSeconds: 2_147_484 }],
    ['a negative retention', { cancelledRequirementRetentionDays: -1 }],
    ['a fractional retention', { doneRequirementRetentionDays: 1.5 }],
    ['null for a required field', { host: null }],
    ['an unknown log level', { logLevel: 'trace' }],
    ['a bad origin', { allowedOrigin: 'javascript:alert(1)' }],
    ['a bad size', { logMaxSize: 'huge' }],
  ])('refuses %s with 400 and changes nothing', async (_name, body) => {
    const fileBefore = fs.readFileSync(configPath, 'utf8');
    const storeBefore = await snapshotStore(manager.dataDirectory());
    // Invalid values on purpose: untyped.
    const res = await sendUntyped(manager.origin, 'PATCH', '/api/configuration', body);
    expect(res.status).toBe(400);
    expect(fs.readFileSync(configPath, 'utf8')).toBe(fileBefore);
    expect(await snapshotStore(manager.dataDirectory())).toEqual(storeBefore);
  });

  it('keeps the file whole under concurrent updates', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        manager.api.PATCH('/api/configuration', { body: { cancelledRequirementRetentionDays: i + 1 } }),
      ),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    const final = (await ok(manager.api.GET('/api/configuration'))).values.cancelledRequirementRetentionDays;
    expect(readFile().cancelledRequirementRetentionDays).toBe(final);
    expect(fs.readdirSync(manager.dataDirectory()).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});
