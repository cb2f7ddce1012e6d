import { Inject, Injectable } from '@nestjs/common';

import type { AttentionPerson, EventActor, ManagerEvent } from '@libs/contracts';

import { runnerPerson } from '../core/board/runner-directory';
import { Clock } from '../core/clock';
import { Database } from '../core/database/database.service';
import { newId } from '../core/ids';
import { RUNTIME, Runtime } from '../core/runtime';
import { EventLog, SYSTEM_ACTOR } from '../events/event-log.service';
import { OnCommitted } from '../events/on-committed';
import { LandingQueueService } from '../landing/landing-queue.service';
import { MessagesService } from '../messages/messages.service';
import { NetworkService } from '../network/network.service';
import type { AttentionItemEntity } from '../requirements/attention-item.entity';
import { AttentionListDto, byAttentionOrder, toAttentionItem } from '../requirements/dto/attention.dto';
import type { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import { toRequirementResponse } from '../requirements/dto/requirement-response.dto';
import { RequirementsService } from '../requirements/requirements.service';
import { RunsRepository } from '../runs/runs.repository';
import { AttentionFacts, AttentionFinding, attentionFindings } from './attention-rules';
import { AttentionRepository } from './attention.repository';

/** How far back in a conversation a CI failure still counts (messages). */
const CI_WINDOW = 200;

/**
 * Needs you (issue 47 §1): keeps each Requirement's open reasons (`attention_item`) equal to what
 * `attentionFindings` says of its state. A reaction to the committed events that can change a
 * reason: it looks at the current state of the Requirements they name, so a replay after a crash
 * (at least once) finds nothing new to write. An item opens and clears with an event
 * (`attention.opened` / `attention.cleared`) carrying the Requirement as it is then.
 */
@Injectable()
export class AttentionService {
  /** One look at a time per Requirement: a later look must not be overwritten by an earlier, slower one. */
  private readonly looks = new Map<string, Promise<void>>();

  constructor(
    private readonly clock: Clock,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly messages: MessagesService,
    private readonly network: NetworkService,
    private readonly queue: LandingQueueService,
    private readonly repository: AttentionRepository,
    private readonly requirements: RequirementsService,
    private readonly runs: RunsRepository,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

  /** GET /attention: every open item, oldest first; `person` keeps one person's (`me`: the one asking). */
  async list(person: string | undefined, actor: EventActor): Promise<AttentionListDto> {
    const personId = person === 'me' ? (actor.id ?? this.runtime.person.id) : person;
    const rows = await this.repository.open(personId);
    return { items: rows.map(toAttentionItem).sort(byAttentionOrder) };
  }

  /** Which of these items are still open (a delayed notification is sent only for those). */
  async openIds(ids: string[]): Promise<Set<string>> {
    return new Set((await this.repository.openOf(ids)).map((row) => row.id));
  }

  /** After what a Requirement's reasons may have changed (each event names its Requirement, or lists them). */
  @OnCommitted([
    'requirement.created',
    'requirement.updated',
    'requirement.moved',
    'requirement.completed',
    'requirement.cancelled',
    'message.created',
    'run.started',
    'run.succeeded',
    'run.failed',
    'run.cancelled',
    'run.timed_out',
    'landing.queue.updated',
    'network.blocked',
    'network.allow_updated',
    'board.runners_changed',
    'manager.configuration.updated',
  ])
  async causesCommitted(events: ManagerEvent[]): Promise<void> {
    const ids = new Set<string>();
    let everyOpen = false;
    for (const event of events) {
      if (event.requirementId !== null && !passing(event)) {
        ids.add(event.requirementId);
      }
      if (event.type === 'landing.queue.updated') {
        event.payload.queue.items.forEach((item) => ids.add(item.requirementId));
        everyOpen = true; // one that left the queue clears its queue reasons
      }
      if (event.type === 'board.runners_changed' || event.type === 'manager.configuration.updated') {
        everyOpen = true;
      }
    }
    if (events.some((e) => e.type === 'board.runners_changed')) {
      (await this.requirements.runningIds()).forEach((id) => ids.add(id));
    }
    if (everyOpen) {
      (await this.repository.requirementsWithItems()).forEach((id) => ids.add(id));
    }
    for (const id of ids) {
      await this.look(id);
    }
  }

  /** Brings one Requirement's items to what its state says now (serialized per Requirement). */
  look(requirementId: string): Promise<void> {
    const before = this.looks.get(requirementId) ?? Promise.resolve();
    const next = before.then(() => this.reconcile(requirementId));
    const settled = next.catch(() => undefined);
    this.looks.set(requirementId, settled);
    void settled.then(() => {
      if (this.looks.get(requirementId) === settled) {
        this.looks.delete(requirementId);
      }
    });
    return next;
  }

  private async reconcile(requirementId: string): Promise<void> {
    const requirement = await this.requirements.snapshot(requirementId);
    if (requirement === null || !this.mine(requirement)) {
      return; // purged (its rows went with it), or another runner's to look at
    }
    const findings = attentionFindings(await this.facts(requirement));
    // Most looks change nothing (a message, a trace): those cost no write. One that might is
    // checked again inside the unit, against the rows as the write path holds them.
    const held = new Map(requirement.attention.map((item) => [item.reason, item.summary]));
    if (held.size === findings.length && findings.every((f) => held.get(f.reason) === f.summary)) {
      return;
    }
    await this.database.write(async (tx) => {
      // With its dependencies: the events carry the snapshot a dashboard keeps.
      const rows = await this.requirements.loadForWrite(tx, requirementId).catch(() => null);
      if (rows === null) {
        return; // purged meanwhile
      }
      const open = rows.requirement.attention ?? [];
      const wanted = new Map(findings.map((f) => [f.reason, f]));
      const cleared = open.filter((item) => !wanted.has(item.reason));
      const person = this.personOf(requirement);
      const opened = findings
        .filter((f) => !open.some((item) => item.reason === f.reason))
        .map((f) => this.newItem(requirementId, f, person));
      const reworded = open.filter((item) => {
        const f = wanted.get(item.reason);
        return f !== undefined && f.summary !== item.summary;
      });
      if (cleared.length === 0 && opened.length === 0 && reworded.length === 0) {
        return;
      }
      this.repository.remove(
        tx,
        cleared.map((item) => item.id),
      );
      opened.forEach((item) => this.repository.insert(tx, item));
      for (const item of reworded) {
        item.summary = wanted.get(item.reason)?.summary ?? item.summary;
        this.repository.reword(tx, item.id, item.summary);
      }
      rows.requirement.attention = [...open.filter((item) => wanted.has(item.reason)), ...opened];
      const snapshot = toRequirementResponse(rows.requirement, rows.session);
      const base = { actor: SYSTEM_ACTOR, requirementId, sessionId: rows.session.id };
      for (const item of cleared) {
        await this.events.append(tx, {
          ...base,
          payload: { item: toAttentionItem(item), requirement: snapshot },
          type: 'attention.cleared',
        });
      }
      for (const item of opened) {
        await this.events.append(tx, {
          ...base,
          payload: { item: toAttentionItem(item), requirement: snapshot },
          type: 'attention.opened',
        });
      }
      if (cleared.length === 0 && opened.length === 0) {
        await this.events.append(tx, { ...base, payload: { requirement: snapshot }, type: 'requirement.updated' });
      }
    });
  }

  /** What the rules read besides the snapshot, each from the feature that owns it. */
  private async facts(requirement: RequirementResponseDto): Promise<AttentionFacts> {
    const live = requirement.status !== 'done' && requirement.status !== 'cancelled';
    if (!live) {
      return { lastAgentMessage: null, lastCiFailure: null, queueItem: null, refused: [], requirement };
    }
    const [said, ci, queue, latestRun] = await Promise.all([
      this.messages.latestOf(requirement.id, 'rd_agent'),
      this.messages.latestWithCode(
        requirement.id,
        ['github.ci_failed', 'gitlab.ci_failed'],
        requirement.session.lastMessageSequence,
        CI_WINDOW,
      ),
      this.queue.list(),
      this.runs.page({ limit: 5, requirementId: requirement.id }),
    ]);
    const rdRun = latestRun.rows.find((run) => run.role === 'rd');
    const refused = rdRun === undefined ? [] : await this.network.stillRefused(requirement.id, rdRun.id);
    return {
      lastAgentMessage: said === null ? null : { body: said.body, createdAt: said.createdAt },
      lastCiFailure: ci === null ? null : { body: ci.body, createdAt: ci.createdAt, sequence: ci.sequence },
      queueItem: queue.items.find((item) => item.requirementId === requirement.id) ?? null,
      refused,
      requirement,
    };
  }

  /**
   * Team mode: a runner looks at the Requirements it runs, the leader at those no runner runs yet:
   * one writer per Requirement's items, and the facts (its network rules) of the runner that runs it.
   */
  private mine(requirement: RequirementResponseDto): boolean {
    const board = this.runtime.board;
    if (!board) {
      return true;
    }
    return requirement.runner === null ? board.leads : requirement.runner.id === board.runnerId;
  }

  /** Whose an item is: the person of the runner that runs the Requirement (team mode), else this manager's. */
  private personOf(requirement: RequirementResponseDto): AttentionPerson {
    const own = this.runtime.person;
    return (requirement.runner && runnerPerson(requirement.runner.id)) ?? { id: own.id, name: own.name };
  }

  private newItem(requirementId: string, finding: AttentionFinding, person: AttentionPerson): AttentionItemEntity {
    const now = this.clock.nowIso();
    return {
      id: newId('attention'),
      personId: person.id,
      personName: person.name,
      reason: finding.reason,
      requirementId,
      // A cause's own time, never one in the future (clocks of other runners, a GitHub timestamp).
      since: finding.since < now ? finding.since : now,
      summary: finding.summary,
    };
  }
}

/**
 * A person's message while the agent works changes no reason (it queues; the run's end is what
 * changes them): the write path's busiest event costs the reaction nothing then.
 */
function passing(event: ManagerEvent): boolean {
  return (
    event.type === 'message.created' &&
    event.payload.message.author === 'human' &&
    event.payload.requirement.session.state === 'running'
  );
}
