import * as fs from 'node:fs';
import * as path from 'node:path';

import { Injectable, Logger, Module } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, MetadataScanner, NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';

import { DomainEvents, OnDomainEvent } from './domain-events';

// Events of this spec only (the application's are declared beside their emitters).
declare module './domain-events' {
  interface DomainEventMap {
    'spec.inOrder': { args: [id: string]; returns: string; delivery: 'inOrder' };
    'spec.settle': { args: [id: string]; returns: void; delivery: 'settle' };
    'spec.notify': { args: [id: string]; returns: void; delivery: 'notify' };
  }
}

const log: string[] = [];
let gate: Promise<void> = Promise.resolve();

@Injectable()
class First {
  @OnDomainEvent('spec.inOrder')
  async a(id: string): Promise<string> {
    log.push(`first.a ${id}`);
    return 'a';
  }

  @OnDomainEvent('spec.inOrder', { order: -1 })
  async early(id: string): Promise<string> {
    log.push(`first.early ${id}`);
    return 'early';
  }

  @OnDomainEvent('spec.settle')
  async fails(): Promise<void> {
    throw new Error('boom');
  }

  @OnDomainEvent('spec.notify')
  async slow(id: string): Promise<void> {
    await gate;
    log.push(`first.slow ${id}`);
  }
}

@Injectable()
class Second {
  refuse = false;

  @OnDomainEvent('spec.inOrder')
  async b(id: string): Promise<string> {
    if (this.refuse) {
      throw new Error('refused');
    }
    log.push(`second.b ${id}`);
    return 'b';
  }

  @OnDomainEvent('spec.inOrder', { order: 1 })
  async late(id: string): Promise<string> {
    log.push(`second.late ${id}`);
    return 'late';
  }

  @OnDomainEvent('spec.settle')
  @OnDomainEvent('spec.notify')
  async either(id: string): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    log.push(`second.either ${id}`);
  }
}

@Module({ imports: [DiscoveryModule], providers: [DomainEvents, First, Second] })
class SpecModule {}

describe(DomainEvents.name, () => {
  let app: INestApplicationContext;
  let sut: DomainEvents;
  const errors: string[] = [];

  beforeAll(async () => {
    app = await NestFactory.createApplicationContext(SpecModule, { logger: false });
    sut = app.get(DomainEvents);
    jest.spyOn(Logger.prototype, 'error').mockImplementation((message: unknown) => void errors.push(String(message)));
  });

  afterAll(async () => {
    await app.close();
    jest.restoreAllMocks();
  });

  beforeEach(() => {
    log.length = 0;
    errors.length = 0;
    app.get(Second).refuse = false;
  });

  it('finds every decorated method on the providers at init, in `order`, then module registration order', () => {
    expect(sut.handlersOf('spec.inOrder')).toEqual(['First.early', 'First.a', 'Second.b', 'Second.late']);
    // One method may handle several events.
    expect(sut.handlersOf('spec.notify')).toEqual(['First.slow', 'Second.either']);
  });

  it('inOrder: awaits each handler in turn and answers their results in order', async () => {
    await expect(sut.emit('spec.inOrder', 'x')).resolves.toEqual(['early', 'a', 'b', 'late']);
    expect(log).toEqual(['first.early x', 'first.a x', 'second.b x', 'second.late x']);
  });

  it('inOrder: the first failure stops the rest and reaches the emitter', async () => {
    app.get(Second).refuse = true;
    await expect(sut.emit('spec.inOrder', 'y')).rejects.toThrow('refused');
    expect(log).toEqual(['first.early y', 'first.a y']);
  });

  it('settle: a failure is logged with the handler and event, and the next handler still runs (awaited)', async () => {
    await sut.settle('spec.settle', 'z');
    expect(log).toEqual(['second.either z']);
    expect(errors).toEqual(['First.fails failed on spec.settle: boom']);
  });

  it('notify: starts every handler and returns before they finish', async () => {
    let release: () => void = () => undefined;
    gate = new Promise<void>((resolve) => (release = resolve));
    sut.notify('spec.notify', 'w');
    expect(log).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['second.either w']);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['second.either w', 'first.slow w']);
  });

  it('refuses an emit before the handlers are registered (it would skip every reaction silently)', async () => {
    const early = new DomainEvents({ getProviders: () => [] } as unknown as DiscoveryService, new MetadataScanner());
    await expect(early.emit('spec.inOrder', 'v')).rejects.toThrow(
      'spec.inOrder emitted before the handlers were registered',
    );
  });
});

describe('the domain event map in the source', () => {
  const SERVER = path.resolve(__dirname, '..');
  const sources = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const full = path.join(dir, entry.name);
      return entry.isDirectory()
        ? sources(full)
        : entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')
          ? [full]
          : [];
    });

  it("makes every emitter import the file that declares its events, so any program that compiles the emitter (the bench's) knows them", () => {
    const files = sources(SERVER);
    const declaredIn = new Map<string, string>();
    for (const file of files.filter((f) => f.endsWith('.events.ts'))) {
      for (const match of fs.readFileSync(file, 'utf8').matchAll(/'([\w.]+)':\s*\{\s*args:/g)) {
        declaredIn.set(match[1], file);
      }
    }
    // The search finds the declarations (it would pass vacuously on none): a few that must exist.
    expect([...declaredIn.keys()]).toEqual(
      expect.arrayContaining(['requirement.starting', 'requirement.created', 'board.eventPublished']),
    );
    const missing: string[] = [];
    for (const file of files) {
      const text = fs.readFileSync(file, 'utf8');
      for (const match of text.matchAll(/domainEvents\.(?:emit|settle|notify)\(\s*'([\w.]+)'/g)) {
        const declaration = declaredIn.get(match[1]);
        if (!declaration) {
          missing.push(`${path.relative(SERVER, file)} emits ${match[1]}, which no *.events.ts declares`);
          continue;
        }
        const spec = `./${path.relative(path.dirname(file), declaration).replace(/\.ts$/, '')}`.replace(
          /^\.\/\.\./,
          '..',
        );
        if (!text.includes(`'${spec}'`)) {
          missing.push(`${path.relative(SERVER, file)} emits ${match[1]} without importing ${spec}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});
