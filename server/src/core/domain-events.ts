import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';

/**
 * In-process domain events: what one feature tells the others happened ("a pull request's
 * status changed", "a Requirement is closing"), so the one that reacts declares its reaction
 * where it lives instead of the emitter calling it or keeping a list of callbacks.
 *
 * The map is one interface, filled in by the feature that emits each event (module augmentation
 * in its `*.events.ts` file, next to the code that emits it), so core depends on no feature and
 * a feature depends only on the features whose events it handles. Every entry says
 * - `args`: what the handlers receive (a unit of work first when they run inside the emitter's);
 * - `returns`: what each handler gives back to the emitter (most give nothing);
 * - `delivery`, fixed per event and checked where it is emitted:
 *   - `inOrder`: handlers run one after another and are awaited; the first that throws stops the
 *     rest and the emitter sees the error. Inside a unit of work that rolls the whole unit back
 *     (this is how a guard refuses a start, and how a reaction stays atomic with its cause).
 *   - `settle`: awaited one after another; a failure is logged and the next handler still runs
 *     (work after a commit that must not undo it).
 *   - `notify`: each started and not awaited; a failure is logged (the emitter goes on at once).
 *
 * Handlers are methods marked `@OnDomainEvent(name)`; they are found once, at module init, on
 * every provider of the application. They run in ascending `order` (default 0), then in the
 * order the application's modules are registered. `npm run architecture` prints the map with
 * every emitter and handler.
 */
// Filled in by module augmentation (see the `*.events.ts` files); empty here on purpose.
export interface DomainEventMap {}

export type Delivery = 'inOrder' | 'settle' | 'notify';

/** What every entry of the map declares. */
export interface DomainEventSpec {
  args: unknown[];
  returns: unknown;
  delivery: Delivery;
}

export type DomainEventName = keyof DomainEventMap & string;

type Spec<K extends DomainEventName> = DomainEventMap[K] extends DomainEventSpec ? DomainEventMap[K] : never;
export type DomainEventArgs<K extends DomainEventName> = Spec<K>['args'];
export type DomainEventHandler<K extends DomainEventName> = (...args: Spec<K>['args']) => Promise<Spec<K>['returns']>;
/** The events of one delivery: each `emit…` method takes only those. */
type EventsDelivered<D extends Delivery> = {
  [K in DomainEventName]: Spec<K>['delivery'] extends D ? K : never;
}[DomainEventName];

const HANDLER = Symbol('domain-event-handler');

interface HandlerMark {
  name: DomainEventName;
  order: number;
}

/**
 * Marks a method as a handler of `name`. Its signature is checked against the map: it takes the
 * event's arguments and resolves to what the event returns.
 */
export function OnDomainEvent<K extends DomainEventName>(name: K, options: { order?: number } = {}) {
  // A handler may take fewer arguments than the event gives (as any callback may).
  return <M extends DomainEventHandler<K>>(
    target: object,
    key: string | symbol,
    descriptor: TypedPropertyDescriptor<M>,
  ): void => {
    const marks = (Reflect.getOwnMetadata(HANDLER, target, key) as HandlerMark[] | undefined) ?? [];
    Reflect.defineMetadata(HANDLER, [...marks, { name, order: options.order ?? 0 }], target, key);
    void descriptor;
  };
}

interface Registered {
  call: (...args: unknown[]) => Promise<unknown>;
  order: number;
  where: string;
}

@Injectable()
export class DomainEvents implements OnModuleInit {
  private readonly logger = new Logger('DomainEvents');
  private readonly handlers = new Map<string, Registered[]>();
  private registered = false;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  /**
   * Finds every handler once every provider exists (this module is the deepest, so its init runs
   * before any feature's): nothing can emit before, since emitting starts in features' inits at
   * the earliest.
   */
  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) {
        continue;
      }
      const prototype = Object.getPrototypeOf(instance) as object;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const marks = Reflect.getMetadata(HANDLER, prototype, method) as HandlerMark[] | undefined;
        for (const mark of marks ?? []) {
          this.add(mark.name, mark.order, `${instance.constructor.name}.${method}`, (...args) =>
            (instance[method] as (...a: unknown[]) => Promise<unknown>)(...args),
          );
        }
      }
    }
    this.registered = true;
  }

  /** For a class outside Nest's container (unit tests): registers a handler by hand. */
  on<K extends DomainEventName>(
    name: K,
    handler: DomainEventHandler<K>,
    options: { order?: number; where?: string } = {},
  ): void {
    this.add(name, options.order ?? 0, options.where ?? 'handler', handler as (...args: unknown[]) => Promise<unknown>);
    this.registered = true;
  }

  /** Who handles `name`, in the order they run (the architecture report and tests read it). */
  handlersOf(name: DomainEventName): string[] {
    return (this.handlers.get(name) ?? []).map((h) => h.where);
  }

  /** `inOrder` delivery: awaited one by one, the first failure thrown; resolves to each handler's result, in order. */
  async emit<K extends EventsDelivered<'inOrder'>>(
    name: K,
    ...args: DomainEventArgs<K>
  ): Promise<Array<Spec<K>['returns']>> {
    const results: Array<Spec<K>['returns']> = [];
    for (const handler of this.list(name)) {
      results.push((await handler.call(...args)) as Spec<K>['returns']);
    }
    return results;
  }

  /** `settle` delivery: awaited one by one; a failure is logged and the next still runs. */
  async settle<K extends EventsDelivered<'settle'>>(name: K, ...args: DomainEventArgs<K>): Promise<void> {
    for (const handler of this.list(name)) {
      await handler.call(...args).catch((err: unknown) => this.report(name, handler, err));
    }
  }

  /** `notify` delivery: each started now, not awaited; a failure is logged. */
  notify<K extends EventsDelivered<'notify'>>(name: K, ...args: DomainEventArgs<K>): void {
    for (const handler of this.list(name)) {
      void handler.call(...args).catch((err: unknown) => this.report(name, handler, err));
    }
  }

  private add(name: string, order: number, where: string, call: Registered['call']): void {
    const list = this.handlers.get(name) ?? [];
    list.push({ call, order, where });
    // Stable: equal orders keep registration order.
    list.sort((a, b) => a.order - b.order);
    this.handlers.set(name, list);
  }

  private list(name: string): Registered[] {
    if (!this.registered) {
      // An emit before the handlers are known would silently skip reactions.
      throw new Error(`domain event ${name} emitted before the handlers were registered`);
    }
    return this.handlers.get(name) ?? [];
  }

  private report(name: string, handler: Registered, err: unknown): void {
    this.logger.error(`${handler.where} failed on ${name}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
