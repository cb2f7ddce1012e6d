import * as fs from 'node:fs';
import * as path from 'node:path';

import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { Subscription } from 'rxjs';

import { AttachmentsRepository } from '../attachments/attachments.repository';
import { storedExtension } from '../attachments/file-signature';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { DomainEvents } from '../core/domain-events';
import { leadsJobs } from '../core/database/postgres/postgres-board';
import { RUNTIME, Runtime } from '../core/runtime';
import { EventLog, SYSTEM_ACTOR } from '../events/event-log.service';
import { EventsRepository } from '../events/events.repository';
import { RequirementLifecycle } from '../requirements/requirement-lifecycle';
import { RequirementsService } from '../requirements/requirements.service';
// The event this service emits (its declaration must be in every program that compiles it).
import './retention.events';

const DAY_MS = 24 * 60 * 60 * 1000;
/** Requirements purged per transaction, so one purge never holds the write path for long. */
const PURGE_BATCH = 200;
const SWEEP_BATCH = 500;
/** An attachment file younger than this may belong to an upload still in flight (renamed just after its commit). */
const SWEEP_MIN_AGE_MS = 60 * 60 * 1000;

/**
 * Done and cancelled Requirements older than their retention are removed with everything
 * they own (session, conversation, attachments and their bytes, runs, their events) in one
 * transaction per batch; the local copies of their attachments go after the commit. Runs at start, daily, and whenever a
 * retention setting changes. A Requirement with a running run is never terminal, so never
 * purged. Local copies that could not be removed are swept on the next purge.
 */
@Injectable()
export class RetentionService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(RetentionService.name);
  private timer: NodeJS.Timeout | undefined;
  private subscription: Subscription | undefined;
  private running: Promise<number> | null = null;

  constructor(
    private readonly attachments: AttachmentsRepository,
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly domainEvents: DomainEvents,
    private readonly eventRows: EventsRepository,
    private readonly events: EventLog,
    private readonly requirementLifecycle: RequirementLifecycle,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // On a board, the leader purges (at start, when it takes over, daily).
    this.runtime.board?.onLeadership(() => void this.purge());
    if (leadsJobs(this.runtime)) {
      await this.purge();
    }
    this.timer = setInterval(() => void (leadsJobs(this.runtime) && this.purge()), DAY_MS);
    this.timer.unref();
    let last = this.retention();
    this.subscription = this.configuration.changes$.subscribe(() => {
      const next = this.retention();
      if (next.cancelled !== last.cancelled || next.done !== last.done) {
        last = next;
        void this.purge();
      }
    });
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
    this.subscription?.unsubscribe();
  }

  /** Purges what is due; resolves with how many Requirements were removed. */
  purge(): Promise<number> {
    this.running ??= this.purgeDue()
      .catch((err: unknown) => {
        this.logger.error(`retention purge failed: ${(err as Error).message}`);
        return 0;
      })
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private retention() {
    return {
      cancelled: this.configuration.get('cancelledRequirementRetentionDays'),
      done: this.configuration.get('doneRequirementRetentionDays'),
    };
  }

  private async purgeDue(): Promise<number> {
    let total = 0;
    for (;;) {
      const purged = await this.purgeBatch();
      total += purged;
      if (purged < PURGE_BATCH) {
        break;
      }
    }
    this.sweepOrphanFiles();
    if (total > 0) {
      this.logger.log({ msg: 'requirements purged', requirements: total });
    }
    return total;
  }

  private purgeBatch(): Promise<number> {
    const now = this.clock.now().getTime();
    const { cancelled, done } = this.retention();
    const cancelledBefore = new Date(now - cancelled * DAY_MS).toISOString();
    const doneBefore = new Date(now - done * DAY_MS).toISOString();
    return this.database.write(async (tx) => {
      const ids = await this.requirements.dueForPurge(tx, cancelledBefore, doneBefore, PURGE_BATCH);
      if (ids.length === 0) {
        return 0;
      }
      const files = await this.attachments.ofRequirementsIn(tx, ids);
      // Their bytes go with their rows (attachment_chunk: ON DELETE CASCADE).
      await this.domainEvents.emit('requirements.purging', tx, ids);
      this.eventRows.deleteForRequirements(tx, ids);
      // The session, conversation, attachments and runs go with it (ON DELETE CASCADE).
      await this.requirementLifecycle.purge(tx, ids);
      await this.events.append(tx, {
        actor: SYSTEM_ACTOR,
        payload: { requirementIds: ids },
        type: 'requirements.purged',
      });
      tx.afterCommit(() => {
        for (const file of files) {
          this.removeFile(`${file.id}${storedExtension(file.kind, file.mediaType, file.fileName)}`);
        }
      });
      return ids.length;
    });
  }

  private removeFile(name: string): void {
    try {
      fs.rmSync(path.join(this.runtime.paths.attachmentsDirectory, name), { force: true });
    } catch (err) {
      this.logger.warn({
        error: (err as Error).message,
        file: name,
        msg: 'attachment file not removed; the next purge retries',
      });
    }
  }

  /**
   * Local copies whose attachment row is gone (a failed removal, a crash after commit). Recent
   * files are left alone: a copy may be renamed into place just after its row was read.
   */
  private sweepOrphanFiles(): void {
    const dir = this.runtime.paths.attachmentsDirectory;
    const cutoff = this.clock.now().getTime() - SWEEP_MIN_AGE_MS;
    const candidates = fs
      .readdirSync(dir)
      .filter((name) => name.startsWith('att_'))
      .filter((name) => {
        try {
          return fs.statSync(path.join(dir, name)).mtimeMs < cutoff;
        } catch {
          return false;
        }
      })
      .map((name) => ({ id: name.replace(/\..*$/, ''), name }));
    void (async () => {
      for (let start = 0; start < candidates.length; start += SWEEP_BATCH) {
        const batch = candidates.slice(start, start + SWEEP_BATCH);
        const known = await this.attachments.existingIds(batch.map((c) => c.id));
        batch.filter((c) => !known.has(c.id)).forEach((c) => this.removeFile(c.name));
      }
    })().catch((err: unknown) => this.logger.warn({ error: (err as Error).message, msg: 'attachment sweep failed' }));
  }
}
