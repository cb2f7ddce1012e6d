import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';

import type { ManagerEvent } from '@libs/contracts';

import { EventBus } from '../../events/event-bus';
import { EventLog, SYSTEM_ACTOR } from '../../events/event-log.service';
import { ManagerEventEntity } from '../../events/manager-event.entity';
import { Clock } from '../clock';
import { ENTITIES } from '../core.module';
import { Database } from './database.service';
import { MIGRATIONS } from './migrations';
import { SnakeNamingStrategy } from './snake-naming.strategy';

describe(Database.name, () => {
  // The failure paths log errors on purpose; keep the test output readable.
  beforeAll(() => Logger.overrideLogger(false));

  let dir: string;
  let writer: DataSource;
  let reader: DataSource;
  let bus: EventBus;
  let sut: Database;
  let events: EventLog;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-db-'));
    const options = {
      database: path.join(dir, 'test.sqlite'),
      enableWAL: true,
      entities: ENTITIES,
      namingStrategy: new SnakeNamingStrategy(),
      type: 'sqlite' as const,
    };
    writer = await new DataSource({ ...options, migrations: MIGRATIONS, migrationsRun: true }).initialize();
    reader = await new DataSource(options).initialize();
    bus = new EventBus();
    sut = new Database(bus, writer, reader);
    events = new EventLog(new Clock());
  });

  afterEach(async () => {
    await writer.destroy();
    await reader.destroy();
    fs.rmSync(dir, { force: true, recursive: true });
  });

  const appendEvent = (marker: string) => (tx: Parameters<Parameters<Database['write']>[0]>[0]) =>
    events.append(tx, { actor: SYSTEM_ACTOR, payload: { failedRunIds: [marker], requirementIds: [] }, type: 'manager.reconciled' });

  it('rolls back only the failing unit of a group-committed batch', async () => {
    const published: ManagerEvent[] = [];
    bus.events$.subscribe(({ event }) => published.push(event));
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        sut.write(async (tx) => {
          const event = await appendEvent(`unit ${i}`)(tx);
          if (i % 5 === 3) {
            throw new Error(`unit ${i} fails after writing`);
          }
          return event.id;
        }),
      ),
    );
    const failed = results.filter((r) => r.status === 'rejected');
    expect(failed).toHaveLength(4);
    const rows = await reader.getRepository(ManagerEventEntity).find({ order: { id: 'ASC' } });
    const markers = rows.map((r) => (JSON.parse(r.payload) as { failedRunIds: string[] }).failedRunIds[0]);
    expect(markers).toEqual(Array.from({ length: 20 }, (_, i) => i).filter((i) => i % 5 !== 3).map((i) => `unit ${i}`));
    // Only committed events are published, in strictly increasing id order.
    expect(published.map((e) => e.id)).toEqual(rows.map((r) => r.id));
  });

  it('publishes nothing and resolves nothing before the commit', async () => {
    let publishedBeforeResolve = 0;
    bus.events$.subscribe(() => publishedBeforeResolve++);
    const { id } = await sut.write(appendEvent('one'));
    expect(publishedBeforeResolve).toBe(1);
    expect(await reader.getRepository(ManagerEventEntity).countBy({ id })).toBe(1);
  });

  it('never lets a reader see a unit that is still open', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const pending = sut.write(async (tx) => {
      await appendEvent('held')(tx);
      await gate;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(await reader.getRepository(ManagerEventEntity).count()).toBe(0);
    release();
    await pending;
    expect(await reader.getRepository(ManagerEventEntity).count()).toBe(1);
  });

  it('lets a unit read its own staged writes and those of the units before it', async () => {
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        sut.write(async (tx) => {
          tx.insert('requirement', {
            completedAt: null, createdAt: `2026-01-0${i + 1}`, createdBy: 'human', description: "it's", id: `req_${i}`,
            model: null, parentRequirementId: null, provider: 'codex', reasoningEffort: null, sourceSessionId: null,
            status: 'todo', title: `t${i}`, updatedAt: 'x',
          });
          const manager = await tx.reads();
          return (await manager.query('SELECT COUNT(*) AS n FROM requirement')) as Array<{ n: number }>;
        }),
      ),
    );
    expect(results.map((r) => r[0]!.n)).toEqual([1, 2, 3, 4, 5]);
    expect(await reader.query(`SELECT description FROM requirement WHERE id = 'req_0'`)).toEqual([{ description: "it's" }]);
  });

  it('blames a failing statement on no one unit: runs the batch again one by one, rejecting only the culprit', async () => {
    const row = (id: string) => ({
      completedAt: null, createdAt: 'c', createdBy: 'human', description: '', id, model: null, parentRequirementId: null,
      provider: 'codex', reasoningEffort: null, sourceSessionId: null, status: 'todo', title: 't', updatedAt: 'u',
    });
    await sut.write(async (tx) => tx.insert('requirement', row('req_taken')));
    const results = await Promise.allSettled(
      ['req_a', 'req_taken', 'req_b'].map((id) =>
        sut.write(async (tx) => {
          tx.insert('requirement', row(id)); // the duplicate fails only when the script runs
          await events.append(tx, { actor: SYSTEM_ACTOR, payload: { failedRunIds: [id], requirementIds: [] }, type: 'manager.reconciled' });
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const ids = (await reader.query('SELECT id FROM requirement ORDER BY id')) as Array<{ id: string }>;
    expect(ids.map((r) => r.id)).toEqual(['req_a', 'req_b', 'req_taken']);
    expect(await reader.getRepository(ManagerEventEntity).count()).toBe(2);
  });

  it('clears the write cache when a batch rolls back', async () => {
    await sut.write(async (tx) => tx.cache.set('k', { v: 1 }));
    expect(await sut.write(async (tx) => tx.cache.get('k'))).toEqual({ v: 1 });
    await expect(
      sut.write(async (tx) => {
        tx.cache.get<{ v: number }>('k')!.v = 2;
        throw new Error('changed its mind');
      }),
    ).rejects.toThrow('changed its mind');
    expect(await sut.write(async (tx) => tx.cache.get('k'))).toBeUndefined();
  });

  it('finishes queued work on shutdown, then refuses more', async () => {
    const queued = Array.from({ length: 10 }, (_, i) => sut.write(appendEvent(`q${i}`)));
    await sut.beforeApplicationShutdown();
    await sut.onApplicationShutdown();
    await Promise.all(queued);
    expect(await reader.getRepository(ManagerEventEntity).count()).toBe(10);
    await expect(sut.write(appendEvent('late'))).rejects.toThrow('shutting down');
  });
});
