import { Logger } from '@nestjs/common';

import type { AgentTraceEvent, EventActor } from '@libs/contracts';

import type { NormalizedTrace } from '../agents/agent-adapter';
import type { Clock } from '../core/clock';
import type { Database } from '../core/database/database.service';
import { newId } from '../core/ids';
import type { SecretsService } from '../core/secrets/secrets.service';
import type { EventLog } from '../events/event-log.service';
import type { RunsRepository } from './runs.repository';

/** A trace entry's detail is capped (the contract says 64 KiB); the cut is marked. */
const MAX_DETAIL = 64 * 1024;
const FLUSH_DELAY_MS = 20;
const FLUSH_SIZE = 200;

function cap(text: string | null): string | null {
  if (text === null || text.length <= MAX_DETAIL) {
    return text;
  }
  return `${text.slice(0, MAX_DETAIL - 40)}\n… [${text.length - MAX_DETAIL + 40} more characters cut]`;
}

/**
 * Batches one run's trace entries into write units (a few ms or 200 entries per transaction),
 * so a chatty agent costs a handful of commits a second, not one per line. Each entry is
 * stored once, as the payload of its `run.trace.appended` event.
 */
export class TraceWriter {
  private static readonly logger = new Logger(TraceWriter.name);
  private buffer: AgentTraceEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sequence: number;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly run: { id: string; requirementId: string; sessionId: string | null; traceCount: number },
    private readonly actor: EventActor,
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly runs: RunsRepository,
    /** A configured secret's value that shows up (an echoed header, a setup's output) is masked before it is stored. */
    private readonly secrets: SecretsService,
  ) {
    this.sequence = run.traceCount;
  }

  add(trace: NormalizedTrace): void {
    this.buffer.push({
      createdAt: this.clock.nowIso(),
      detail: cap(this.secrets.maskNullable(trace.detail)),
      id: newId('trace'),
      kind: trace.kind,
      nativeType: trace.nativeType,
      runId: this.run.id,
      sequence: ++this.sequence,
      status: trace.status,
      title: this.secrets.mask(trace.title).slice(0, 500),
      toolCallId: trace.toolCallId,
      toolName: trace.toolName,
    });
    if (this.buffer.length >= FLUSH_SIZE) {
      void this.flush();
    } else {
      this.timer ??= setTimeout(() => void this.flush(), FLUSH_DELAY_MS);
    }
  }

  /** Writes what is buffered; resolves when everything added so far is committed. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    this.buffer = [];
    if (batch.length > 0) {
      const traceCount = this.sequence;
      this.chain = this.chain.then(() =>
        this.database
          .write(async (tx) => {
            for (const trace of batch) {
              await this.events.append(tx, {
                actor: this.actor,
                payload: { trace },
                requirementId: this.run.requirementId,
                runId: this.run.id,
                sessionId: this.run.sessionId,
                type: 'run.trace.appended',
              });
            }
            this.runs.update(tx, { traceCount }, { id: this.run.id });
          })
          // A lost trace batch must not take the run down; it is logged, not hidden.
          .catch((err: unknown) =>
            TraceWriter.logger.error({ error: (err as Error).message, msg: 'trace batch lost', runId: this.run.id }),
          ),
      );
    }
    return this.chain;
  }
}
