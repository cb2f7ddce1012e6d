import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
} from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import type { Subscription } from 'rxjs';

import type { ManagerEvent } from '@libs/contracts';

import { Clock } from '../core/clock';
import { OnDomainEvent } from '../core/domain-events';
import { leadsJobs } from '../core/database/postgres/postgres-board';
import { RUNTIME, type Runtime } from '../core/runtime';
import { TimersService } from './timers.service';

const TIMEOUT_NAME = 'agent-timers';
/**
 * The armed timeout never sleeps longer than this: a wall clock that jumps (a laptop waking
 * from sleep) is noticed within a minute, and Node's 24.8-day timeout limit never matters.
 */
const MAX_SLEEP_MS = 60_000;
/** After a failed delivery, wait before retrying so a broken Requirement cannot spin the loop. */
const RETRY_AFTER_FAILURE_MS = 5_000;
const SHUTDOWN_WAIT_MS = 5_000;
/** On a board, a runner that does not lead checks this often whether it does (it is also woken when it takes over). */
const FOLLOWER_CHECK_MS = 5_000;

/**
 * Arms one timeout, through @nestjs/schedule's registry, for the earliest active timer; fires
 * what is due and re-arms. Re-armed after every timer change, when the clock is adjusted,
 * and at start (which also delivers what came due while the manager was down).
 */
@Injectable()
export class TimerScheduler implements BeforeApplicationShutdown, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(TimerScheduler.name);
  private subscription: Subscription | undefined;
  private unsubscribeClock: (() => void) | undefined;
  private pass: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly registry: SchedulerRegistry,
    private readonly timers: TimersService,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
  ) {}

  onApplicationBootstrap(): void {
    this.runtime.board?.onLeadership(() => this.wake());
    this.subscription = this.timers.changed$.subscribe(() => this.wake());
    this.unsubscribeClock = this.clock.onAdjusted(() => this.wake());
    this.wake();
  }

  /**
   * Team mode: a timer another runner created or cancelled. The leader fires every runner's
   * timers, but `changed$` only tells it of its own; without this it would sleep past one made
   * elsewhere (or never wake, with no timer of its own armed).
   */
  @OnDomainEvent('board.eventPublished')
  onBoardEvent(event: ManagerEvent): Promise<void> {
    if (event.type === 'timer.created' || event.type === 'timer.cancelled') {
      this.wake();
    }
    return Promise.resolve();
  }

  onModuleDestroy(): void {
    this.stopped = true;
    this.subscription?.unsubscribe();
    this.unsubscribeClock?.();
    this.clearTimeout();
  }

  /** A pass in flight finishes its deliveries before the database closes (bounded). */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await Promise.race([this.settled(), new Promise((r) => setTimeout(r, SHUTDOWN_WAIT_MS).unref())]);
  }

  /** Fires whatever is due, then arms for the next. Calls during a pass fold into one more pass. */
  wake(): void {
    if (this.stopped) {
      return;
    }
    if (this.pass) {
      this.again = true;
      return;
    }
    this.pass = this.run()
      .catch((err: unknown) => {
        this.logger.error({ error: (err as Error).message, msg: 'timer pass failed' });
        this.arm(RETRY_AFTER_FAILURE_MS);
      })
      .finally(() => {
        this.pass = null;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Resolves once the current pass (if any) is over: lets tests and shutdown settle. */
  async settled(): Promise<void> {
    while (this.pass) {
      await this.pass;
    }
  }

  private async run(): Promise<void> {
    if (!leadsJobs(this.runtime)) {
      // Another runner of the board fires timers; this one looks again in case it takes over.
      this.arm(FOLLOWER_CHECK_MS);
      return;
    }
    const { failed } = await this.timers.fireDue();
    const next = await this.timers.nextDueAt();
    if (!next) {
      this.clearTimeout();
      return;
    }
    const delay = Math.max(0, next.getTime() - this.clock.now().getTime());
    this.arm(failed > 0 ? Math.max(delay, RETRY_AFTER_FAILURE_MS) : delay);
  }

  private arm(delayMs: number): void {
    if (this.stopped) {
      return;
    }
    this.clearTimeout();
    const handle = setTimeout(
      () => {
        this.registry.deleteTimeout(TIMEOUT_NAME);
        this.wake();
      },
      Math.min(delayMs, MAX_SLEEP_MS),
    );
    handle.unref();
    this.registry.addTimeout(TIMEOUT_NAME, handle);
  }

  private clearTimeout(): void {
    if (this.registry.doesExist('timeout', TIMEOUT_NAME)) {
      this.registry.deleteTimeout(TIMEOUT_NAME);
    }
  }
}
