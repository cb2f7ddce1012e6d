import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { Logger } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { DataSource } from 'typeorm';

import type { ManagerEvent } from '@libs/contracts';

import type { AttachmentsService } from '../../attachments/attachments.service';
import { DependenciesRepository } from '../../requirements/dependencies.repository';
import { DomainEvents } from '../domain-events';
import { EventBus } from '../event-bus';
import { EventLog, HUMAN_ACTOR, SYSTEM_ACTOR } from '../../events/event-log.service';
import { ManagerEventEntity } from '../../events/manager-event.entity';
import { MessagesService } from '../../messages/messages.service';
import { RequirementMessageEntity } from '../../messages/requirement-message.entity';
import { AgentSessionEntity } from '../../requirements/agent-session.entity';
import { RequirementEntity } from '../../requirements/requirement.entity';
import { RequirementLifecycle } from '../../requirements/requirement-lifecycle';
import { RequirementRows, RequirementsRepository } from '../../requirements/requirements.repository';
import { RequirementsService } from '../../requirements/requirements.service';
import { MessagesRepository } from '../../messages/messages.repository';
import { SearchRepository } from '../../search/search.repository';
import { Clock } from '../clock';
import type { ConfigurationService } from '../configuration/configuration.service';
import { ENTITIES } from '../core.module';
import { SecretsService } from '../secrets/secrets.service';
import { Database } from './database.service';
import { MIGRATIONS } from './migrations';
import { SnakeNamingStrategy } from './snake-naming.strategy';
import type { UnitOfWork } from './unit-of-work';

describe(Database.name, () => {
  // The failure paths log errors on purpose; keep the test output readable.
  beforeAll(() => Logger.overrideLogger(false));

  let dir: string;
  let writer: DataSource;
  let reader: DataSource;
  let bus: EventBus;
  let sut: Database;
  let events: EventLog;
  let requirements: RequirementsService;
  let domainEvents: DomainEvents;
  let messages: MessagesService;
  /** Scripts sent to SQLite by the write path (each one round trip). */
  let scripts: string[];

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
    sut = new Database(bus, writer, reader, { store: { kind: 'sqlite', path: options.database } });
    await sut.onModuleInit();
    const clock = new Clock();
    events = new EventLog(clock);
    const search = new SearchRepository(sut);
    const requirementRows = new RequirementsRepository(sut, search);
    // No default budget: the configuration answers null for it.
    const configuration = { get: () => null } as unknown as ConfigurationService;
    const dependencyRows = new DependenciesRepository(sut);
    const lifecycle = new RequirementLifecycle(requirementRows, dependencyRows);
    // No handlers: the aggregate's own rules only (a test may add one).
    domainEvents = new DomainEvents({ getProviders: () => [] } as unknown as DiscoveryService, new MetadataScanner());
    domainEvents.onModuleInit();
    requirements = new RequirementsService(
      clock,
      configuration,
      sut,
      dependencyRows,
      domainEvents,
      events,
      lifecycle,
      requirementRows,
    );
    const noAttachments = { claim: () => Promise.resolve([]) } as unknown as AttachmentsService;
    messages = new MessagesService(
      noAttachments,
      clock,
      events,
      new MessagesRepository(sut, search),
      lifecycle,
      requirements,
      new SecretsService(configuration),
    );
    scripts = [];
    const connection = (
      writer.driver as unknown as {
        databaseConnection: { exec: (sql: string, cb: (err: Error | null) => void) => void };
      }
    ).databaseConnection;
    const exec = connection.exec.bind(connection);
    jest.spyOn(connection, 'exec').mockImplementation((sql, cb) => {
      scripts.push(sql);
      exec(sql, cb);
    });
  });

  afterEach(async () => {
    await sut.onApplicationShutdown();
    await writer.destroy();
    await reader.destroy();
    fs.rmSync(dir, { force: true, recursive: true });
  });

  const appendEvent = (marker: string) => (tx: UnitOfWork) =>
    events.append(tx, {
      actor: SYSTEM_ACTOR,
      payload: { failedRunIds: [marker], requirementIds: [] },
      type: 'manager.reconciled',
    });

  const requirementRow = (id: string): RequirementEntity => ({
    budgetMaxCostUsd: null,
    budgetMaxTokens: null,
    budgetReachedAt: null,
    completedAt: null,
    createdAt: 'c',
    createdBy: 'human',
    description: '',
    autoReviewMaxRounds: null,
    autoReviewProvider: null,
    forkedFromRequirementId: null,
    source: null,
    sourceKey: null,
    runnerId: null,
    id,
    model: null,
    parentRequirementId: null,
    provider: 'codex',
    reasoningEffort: null,
    sourceSessionId: null,
    status: 'todo',
    title: 't',
    treeUsageCostUsd: null,
    treeUsageInputTokens: 0,
    treeUsageOutputTokens: 0,
    updatedAt: 'u',
    usageCostUsd: null,
    usageInputTokens: 0,
    usageOutputTokens: 0,
  });

  /** Holds the write path until `release()`, so that the units written meanwhile form one batch. */
  const holdQueue = async () => {
    let release!: () => void;
    let running!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const started = new Promise<void>((r) => (running = r));
    const held = sut.write(() => {
      running();
      return gate;
    });
    await started; // alone in its batch: what is written next waits for the next one
    return async () => {
      release();
      await held;
    };
  };

  const reply = (tx: UnitOfWork, rows: RequirementRows, body: string) =>
    messages.append(tx, rows, { author: 'human', body, deliverToRd: true }, HUMAN_ACTOR);

  const storedEvents = async () => reader.getRepository(ManagerEventEntity).find({ order: { id: 'ASC' } });

  it('rolls back only the failing unit of a group-committed batch, running no other unit again', async () => {
    const published: ManagerEvent[] = [];
    bus.events$.subscribe(({ event }) => published.push(event));
    const runs = new Array<number>(20).fill(0);
    const release = await holdQueue();
    const results = Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        sut.write(async (tx) => {
          runs[i]++;
          const event = await appendEvent(`unit ${i}`)(tx);
          if (i % 5 === 3) {
            throw new Error(`unit ${i} fails after writing`);
          }
          return event.id;
        }),
      ),
    );
    await release();
    const failed = (await results).filter((r) => r.status === 'rejected');
    expect(failed).toHaveLength(4);
    expect(runs).toEqual(new Array<number>(20).fill(1));
    const rows = await storedEvents();
    const markers = rows.map((r) => (JSON.parse(r.payload) as { failedRunIds: string[] }).failedRunIds[0]);
    expect(markers).toEqual(
      Array.from({ length: 20 }, (_, i) => i)
        .filter((i) => i % 5 !== 3)
        .map((i) => `unit ${i}`),
    );
    // Only committed events are published, in id order, and the ids of the failed units were given back.
    expect(published.map((e) => e.id)).toEqual(rows.map((r) => r.id));
    expect(rows.map((r) => r.id)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
  });

  it('commits 98 of 100 concurrent replies when one unit throws after its statements were sent and one before', async () => {
    const { id } = await requirements.create({ createdBy: 'human', provider: 'codex', title: 'busy' }, HUMAN_ACTOR);
    const published: ManagerEvent[] = [];
    bus.events$.subscribe(({ event }) => published.push(event));
    const firstId = (await storedEvents()).at(-1)!.id;
    const runs = new Array<number>(100).fill(0);
    const release = await holdQueue();
    scripts.length = 0;
    const results = Promise.allSettled(
      Array.from({ length: 100 }, (_, i) =>
        sut.write(async (tx) => {
          runs[i]++;
          const rows = await requirements.loadForWrite(tx, id);
          const { message } = await reply(tx, rows, `reply ${i}`);
          if (i === 40) {
            await tx.reads(); // sends its statements (and those of the 40 units before it)
            throw new Error('unit 40 changed its mind after its writes reached SQLite');
          }
          if (i === 70) {
            throw new Error('unit 70 changed its mind before anything of it was sent');
          }
          return message.sequence;
        }),
      ),
    );
    await release();
    const settled = await results;

    expect(runs).toEqual(new Array<number>(100).fill(1));
    expect(settled.map((r, i) => (r.status === 'rejected' ? i : null)).filter((i) => i !== null)).toEqual([40, 70]);
    // Sequences: gap-free in commit order, the failed units' numbers taken by the next ones.
    const sequences = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    expect(sequences).toEqual(Array.from({ length: 98 }, (_, i) => i + 1));
    const stored = await reader
      .getRepository(RequirementMessageEntity)
      .find({ order: { sequence: 'ASC' }, where: { requirementId: id } });
    expect(stored.map((m) => m.sequence)).toEqual(sequences);
    expect(stored.map((m) => m.body)).not.toContain('reply 40');
    expect(stored.map((m) => m.body)).not.toContain('reply 70');
    // Event ids: gap-free, in commit order, published as stored.
    const rows = (await storedEvents()).filter((e) => e.id > firstId);
    expect(rows.map((e) => e.id)).toEqual(Array.from({ length: 98 }, (_, i) => firstId + 1 + i));
    expect(rows.map((e) => (JSON.parse(e.payload) as { message: { sequence: number } }).message.sequence)).toEqual(
      sequences,
    );
    expect(published.map((e) => e.id)).toEqual(rows.map((e) => e.id));
    // The search documents, written with the batch at COMMIT: the committed messages only, in commit order.
    const documents = await reader.query<Array<{ body: string; sequence: number }>>(
      'SELECT body, sequence FROM search_document WHERE message_id IS NOT NULL AND requirement_id = ? ORDER BY row_id',
      [id],
    );
    expect(documents.map((d) => d.sequence)).toEqual(sequences);
    expect(documents.map((d) => d.body)).toEqual(stored.map((m) => m.body));
    // Two round trips for 100 units: units 0–40 (unit 40's read), then the rest with COMMIT.
    expect(scripts).toHaveLength(2);
    // The cache still matches the database: the next reply continues at 99.
    const session = await reader.getRepository(AgentSessionEntity).findOneByOrFail({ requirementId: id });
    const cached = await sut.write(async (tx) => (await requirements.loadForWrite(tx, id)).session);
    expect({ ...cached }).toEqual({ ...session });
    expect(session).toMatchObject({ lastMessageSequence: 98, pendingMessageCount: 98 });
    const next = await sut.write(
      async (tx) => (await reply(tx, await requirements.loadForWrite(tx, id), 'next')).message.sequence,
    );
    expect(next).toBe(99);
  });

  it("skips a message's search document when a later unit of its batch removed the Requirement, and commits the rest", async () => {
    const kept = await requirements.create({ createdBy: 'human', provider: 'codex', title: 'kept' }, HUMAN_ACTOR);
    const removed = await requirements.create({ createdBy: 'human', provider: 'codex', title: 'removed' }, HUMAN_ACTOR);
    const requirementRows = new RequirementsRepository(sut, new SearchRepository(sut));
    const release = await holdQueue();
    const results = Promise.allSettled([
      sut.write(
        async (tx) => (await reply(tx, await requirements.loadForWrite(tx, removed.id), 'last words')).message.id,
      ),
      sut.write(async (tx) => (await reply(tx, await requirements.loadForWrite(tx, kept.id), 'still here')).message.id),
      sut.write(async (tx) => requirementRows.delete(tx, [removed.id])),
    ]);
    await release();
    expect((await results).map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    const documents = await reader.query<Array<{ requirementId: string; body: string }>>(
      'SELECT requirement_id AS requirementId, body FROM search_document WHERE message_id IS NOT NULL ORDER BY row_id',
    );
    expect(documents).toEqual([{ body: 'still here', requirementId: kept.id }]);
    expect(await reader.query('SELECT id FROM requirement ORDER BY id')).toEqual([{ id: kept.id }]);
  });

  it('rolls back a unit whose own statement fails, alone and without running anyone again', async () => {
    await sut.write(async (tx) => tx.insert(RequirementEntity, requirementRow('req_taken')));
    const runs = [0, 0, 0];
    const release = await holdQueue();
    const results = Promise.allSettled(
      ['req_a', 'req_taken', 'req_b'].map((id, i) =>
        sut.write(async (tx) => {
          runs[i]++;
          tx.insert(RequirementEntity, requirementRow(id));
          await events.append(tx, {
            actor: SYSTEM_ACTOR,
            payload: { failedRunIds: [id], requirementIds: [] },
            type: 'manager.reconciled',
          });
          await tx.reads(); // the duplicate fails here, in its own unit
        }),
      ),
    );
    await release();
    expect((await results).map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(((await results)[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'SQLITE_CONSTRAINT' });
    expect(runs).toEqual([1, 1, 1]);
    const ids = await reader.query<Array<{ id: string }>>('SELECT id FROM requirement ORDER BY id');
    expect(ids.map((r) => r.id)).toEqual(['req_a', 'req_b', 'req_taken']);
    expect((await storedEvents()).map((e) => e.id)).toEqual([1, 2]);
  });

  it('finds the unit whose statement failed in a script of many, rejects it alone and runs only the units after it again', async () => {
    await sut.write(async (tx) => tx.insert(RequirementEntity, requirementRow('req_taken')));
    const ids = ['req_a', 'req_b', 'req_taken', 'req_c', 'req_d'];
    const runs = ids.map(() => 0);
    const release = await holdQueue();
    scripts.length = 0;
    const results = Promise.allSettled(
      ids.map((id, i) =>
        sut.write(async (tx) => {
          runs[i]++;
          tx.insert(RequirementEntity, requirementRow(id)); // the duplicate fails only when the script runs, at COMMIT
          await events.append(tx, {
            actor: SYSTEM_ACTOR,
            payload: { failedRunIds: [id], requirementIds: [] },
            type: 'manager.reconciled',
          });
        }),
      ),
    );
    await release();
    expect((await results).map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    // The units after the culprit ran on its writes (the write cache): they alone run again.
    expect(runs).toEqual([1, 1, 1, 2, 2]);
    const stored = await reader.query<Array<{ id: string }>>('SELECT id FROM requirement ORDER BY id');
    expect(stored.map((r) => r.id)).toEqual(['req_a', 'req_b', 'req_c', 'req_d', 'req_taken']);
    const rows = await storedEvents();
    expect(rows.map((e) => e.id)).toEqual([1, 2, 3, 4]);
    expect(rows.map((e) => (JSON.parse(e.payload) as { failedRunIds: string[] }).failedRunIds[0])).toEqual([
      'req_a',
      'req_b',
      'req_c',
      'req_d',
    ]);
  });

  it('runs a unit again when its read finds that an earlier unit of the batch failed in SQL', async () => {
    await sut.write(async (tx) => tx.insert(RequirementEntity, requirementRow('req_taken')));
    const runs = [0, 0, 0];
    const release = await holdQueue();
    const results = Promise.allSettled([
      sut.write(async (tx) => {
        runs[0]++;
        tx.insert(RequirementEntity, requirementRow('req_a'));
      }),
      sut.write(async (tx) => {
        runs[1]++;
        tx.insert(RequirementEntity, requirementRow('req_taken'));
      }),
      sut.write(async (tx) => {
        runs[2]++;
        tx.insert(RequirementEntity, requirementRow('req_c'));
        const manager = await tx.reads(); // this script holds the duplicate of the unit before
        return (await manager.query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM requirement'))[0].n;
      }),
    ]);
    await release();
    const settled = await results;
    expect(settled.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(runs).toEqual([1, 1, 2]);
    expect((settled[2] as PromiseFulfilledResult<number>).value).toBe(3); // req_taken, req_a, req_c
    const stored = await reader.query<Array<{ id: string }>>('SELECT id FROM requirement ORDER BY id');
    expect(stored.map((r) => r.id)).toEqual(['req_a', 'req_c', 'req_taken']);
  });

  it('rejects the units that ran when a failure takes the transaction with it, and runs the rest next', async () => {
    await sut.write(async (tx) => tx.insert(RequirementEntity, requirementRow('req_taken')));
    const runs = [0, 0, 0];
    const release = await holdQueue();
    const results = Promise.allSettled([
      sut.write(async (tx) => {
        runs[0]++;
        tx.insert(RequirementEntity, requirementRow('req_a'));
        await appendEvent('a')(tx);
      }),
      sut.write(async (tx) => {
        runs[1]++;
        tx.execute('ROLLBACK'); // as SQLite itself does on a full disk or an I/O error
        tx.insert(RequirementEntity, requirementRow('req_taken'));
        await tx.reads();
      }),
      sut.write(async (tx) => {
        runs[2]++;
        tx.insert(RequirementEntity, requirementRow('req_c'));
        await appendEvent('c')(tx);
      }),
    ]);
    await release();
    expect((await results).map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
    expect(runs).toEqual([1, 1, 1]);
    const stored = await reader.query<Array<{ id: string }>>('SELECT id FROM requirement ORDER BY id');
    expect(stored.map((r) => r.id)).toEqual(['req_c', 'req_taken']);
    expect((await storedEvents()).map((e) => e.id)).toEqual([1]);
  });

  it('rejects every unit of a batch whose COMMIT fails, and leaves the cache and event ids as they were', async () => {
    const { id } = await requirements.create({ createdBy: 'human', provider: 'codex', title: 'x' }, HUMAN_ACTOR);
    await sut.write(async (tx) => reply(tx, await requirements.loadForWrite(tx, id), 'first'));
    const release = await holdQueue();
    const results = Promise.allSettled([
      sut.write(async (tx) => reply(tx, await requirements.loadForWrite(tx, id), 'lost 1')),
      sut.write(async (tx) => {
        // A deferred foreign key is checked at COMMIT only, whichever unit broke it.
        tx.execute('PRAGMA defer_foreign_keys = ON');
        tx.insert(RequirementEntity, { ...requirementRow('req_child'), parentRequirementId: 'req_missing' });
      }),
      sut.write(async (tx) => reply(tx, await requirements.loadForWrite(tx, id), 'lost 2')),
    ]);
    await release();
    expect((await results).map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(((await results)[0] as PromiseRejectedResult).reason).toMatchObject({
      message: expect.stringContaining('FOREIGN KEY'),
    });
    const bodies = (await reader.getRepository(RequirementMessageEntity).findBy({ requirementId: id })).map(
      (m) => m.body,
    );
    expect(bodies).toEqual(['first']);
    const lastId = (await storedEvents()).at(-1)!.id;
    const next = await sut.write(async (tx) => {
      const { message } = await reply(tx, await requirements.loadForWrite(tx, id), 'second');
      return { event: await appendEvent('after')(tx), sequence: message.sequence };
    });
    expect(next.sequence).toBe(2);
    expect(next.event.id).toBe(lastId + 2);
  });

  it('publishes an event only once its row is committed, and resolves the unit after that', async () => {
    const seen: Array<{ id: number; committed: Promise<number>; resolved: boolean }> = [];
    let resolved = false;
    // At the moment of publishing, a read on the other connection (committed data only) finds the row.
    bus.events$.subscribe(({ event }) =>
      seen.push({
        committed: reader.getRepository(ManagerEventEntity).countBy({ id: event.id }),
        id: event.id,
        resolved,
      }),
    );
    const release = await holdQueue();
    const written = Promise.all([sut.write(appendEvent('one')), sut.write(appendEvent('two'))]).then((all) => {
      resolved = true;
      return all;
    });
    await release();
    const [one, two] = await written;
    expect(seen.map((s) => s.id)).toEqual([one.id, two.id]);
    expect(seen.map((s) => s.resolved)).toEqual([false, false]);
    expect(await Promise.all(seen.map((s) => s.committed))).toEqual([1, 1]);
  });

  it('never lets a reader see a unit that is still open', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const pending = sut.write(async (tx) => {
      await appendEvent('held')(tx);
      tx.insert(RequirementEntity, requirementRow('req_held'));
      await tx.reads();
      await gate;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(await reader.getRepository(RequirementEntity).count()).toBe(0);
    release();
    await pending;
    expect(await reader.getRepository(RequirementEntity).count()).toBe(1);
    expect(await reader.getRepository(ManagerEventEntity).count()).toBe(1);
  });

  it('lets a unit read its own staged writes and those of the units before it', async () => {
    const release = await holdQueue();
    const results = Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        sut.write(async (tx) => {
          tx.insert(RequirementEntity, { ...requirementRow(`req_${i}`), description: "it's" });
          const manager = await tx.reads();
          return await manager.query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM requirement');
        }),
      ),
    );
    await release();
    expect((await results).map((r) => r[0].n)).toEqual([1, 2, 3, 4, 5]);
    expect(await reader.query(`SELECT description FROM requirement WHERE id = 'req_0'`)).toEqual([
      { description: "it's" },
    ]);
  });

  it('keeps only committed rows in the write cache: a unit that throws leaves it untouched', async () => {
    await sut.write(async (tx) => tx.cache.set('k', { v: 1 }));
    await expect(
      sut.write(async (tx) => {
        tx.cache.get<{ v: number }>('k')!.v = 2;
        tx.cache.set('other', { v: 3 });
        throw new Error('changed its mind');
      }),
    ).rejects.toThrow('changed its mind');
    expect(await sut.write(async (tx) => tx.cache.get('k'))).toEqual({ v: 1 });
    expect(await sut.write(async (tx) => tx.cache.get('other'))).toBeUndefined();
    // A unit's change is seen by the next unit once committed, and a copy is what the next unit gets.
    const held = await sut.write(async (tx) => {
      const row = tx.cache.get<{ v: number }>('k')!;
      row.v = 4;
      return row;
    });
    held.v = 99; // after commit: must not reach the cache
    expect(await sut.write(async (tx) => tx.cache.get('k'))).toEqual({ v: 4 });
  });

  it('rolls the emitting unit back when a domain-event handler inside it throws: no row, no event, no cache entry', async () => {
    await requirements.create({ createdBy: 'human', provider: 'codex', title: 'before' }, HUMAN_ACTOR);
    const eventsBefore = await reader.query('SELECT COUNT(*) AS n FROM manager_event');
    const staged: string[] = [];
    domainEvents.on('requirement.created', async (_tx, rows) => void staged.push(rows.requirement.id));
    domainEvents.on('requirement.created', () => Promise.reject(new Error('handler refused')));
    await expect(
      requirements.create({ createdBy: 'human', provider: 'codex', title: 'refused' }, HUMAN_ACTOR),
    ).rejects.toThrow('handler refused');
    // The first handler ran (its rows were staged in the unit), and nothing of that unit stayed.
    expect(staged).toHaveLength(1);
    expect(await reader.query(`SELECT title FROM requirement ORDER BY title`)).toEqual([{ title: 'before' }]);
    expect(await reader.query(`SELECT COUNT(*) AS n FROM agent_session WHERE requirement_id = '${staged[0]}'`)).toEqual(
      [{ n: 0 }],
    );
    expect(await reader.query('SELECT COUNT(*) AS n FROM manager_event')).toEqual(eventsBefore);
    expect(await sut.write(async (tx) => (await requirements.findForWrite(tx, staged[0])) ?? null)).toBeNull();
  });

  it('refuses to stage through a unit that has ended', async () => {
    let kept: UnitOfWork | undefined;
    await sut.write(async (tx) => {
      kept = tx;
    });
    expect(() => kept!.execute('DELETE FROM requirement')).toThrow('ended');
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
