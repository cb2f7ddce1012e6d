import { Inject, Injectable, Logger } from '@nestjs/common';

import type { ManagerEvent } from '@libs/contracts';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { RUNTIME, type Runtime } from '../core/runtime';
import { OnCommitted } from '../events/on-committed';
import { ForgeError } from '../forges/forge.errors';
import type { IssueForge } from '../forges/forge-issues';
import { FORGE_WORDS, ForgeRegistry } from '../forges/pull-request-forge';
import { gitLabHosts, hostOf } from '../landing/forge-remote';
import { RequirementsService } from '../requirements/requirements.service';
import { TriggerDeliveryService } from '../triggers/trigger-delivery.service';
import {
  ISSUE_WRITE_BACK_TRIGGER,
  type OwedComment,
  issueName,
  markerOf,
  pullRequestWriteBack,
  writeBacksOf,
} from './issue-write-back';

/** A forge's answers a retry may cure: the reaction is handed the events again, with backoff. */
const RETRIED: ReadonlySet<string> = new Set(['rate_limited', 'timeout', 'network', 'unauthorized']);
const WRITE_BACK_ACTOR = { id: 'issue.write-back', kind: 'trigger' as const };
/** How far back a retry looks for its comment on the issue. */
const MARK_SEARCH_MS = 7 * 24 * 3600_000;

/**
 * Writes back to the issue an imported Requirement came from (issue 49 §3, `intakeWriteBack`): a
 * comment when its agent starts work and when a PR of the issue's repository is registered; a
 * local land comments with the commit and closes the issue; a cancellation comments only in
 * `work_and_cancel`. A reaction over the committed events, so a crash or a GitHub outage loses
 * nothing: each write's receipt is taken after GitHub accepted it, one write at a time, and a
 * comment tried before is looked for on the issue before it is written again. What GitHub refuses
 * for good (the token may not write issues, the issue is gone) is said once in the Requirement's
 * conversation and not retried. Team mode: the leader writes (as notifications are sent), so an
 * event committed while no runner leads is not written back.
 */
@Injectable()
export class IssueWriteBack {
  private readonly logger = new Logger(IssueWriteBack.name);
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly configuration: ConfigurationService,
    private readonly forges: ForgeRegistry,
    private readonly receipts: TriggerDeliveryService,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Pick<Runtime, 'board'>,
  ) {}

  @OnCommitted([
    'pull_request.created',
    'requirement.cancelled',
    'requirement.completed',
    'requirement.updated',
    'run.started',
  ])
  workChanged(events: ManagerEvent[]): Promise<void> {
    const turn = this.queue.then(() => this.writeAll(events));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private async writeAll(events: ManagerEvent[]): Promise<void> {
    const mode = this.configuration.get('intakeWriteBack');
    if (mode === 'off' || (this.runtime.board && !this.runtime.board.leads)) {
      return;
    }
    const owed = writeBacksOf(events, mode === 'work_and_cancel');
    for (const event of events) {
      if (event.type === 'pull_request.created' && event.requirementId !== null) {
        // The PR's event does not carry its Requirement: only imported ones are read.
        const requirement = await this.requirements.find(event.requirementId);
        const write = requirement && pullRequestWriteBack(requirement, event.payload.pullRequest);
        if (write) {
          owed.push(write);
        }
      }
    }
    const gitlabHosts = gitLabHosts(this.configuration.get('gitlabApiUrl'));
    for (const write of owed) {
      const forge = this.forges.get(write.forge);
      // An issue of another GitLab than the one configured now is not written with this one's token.
      if (write.forge === 'gitlab' && !gitlabHosts.includes(hostOf(write.url))) {
        this.logger.warn({ issue: issueName(write), msg: 'write-back skipped: the issue is on another GitLab' });
      } else if (forge?.configured === true) {
        await this.write(forge, write);
      }
    }
  }

  /**
   * The comment, then (a land) the close, each with its own receipt, taken once GitHub accepted
   * it. A comment tried before and not receipted (a crash or a timeout after GitHub took it) is
   * looked for on the issue by its mark first, so it is not written twice.
   */
  private async write(forge: IssueForge, write: OwedComment): Promise<void> {
    const key = write.receiptKey;
    const seen = await this.receipts.seenKeys(write.requirementId, key);
    if (seen.has(key)) {
      return;
    }
    if (!seen.has(`${key}:comment`)) {
      await this.step(write, 'comment', async () => {
        const tried = seen.has(`${key}:tried`);
        if (!tried) {
          await this.record(write, `${key}:tried`);
        }
        if (!tried || !(await this.onIssue(forge, write))) {
          await forge.commentOnIssue(write.repository, write.number, write.body);
        }
      });
    }
    if (write.close && !seen.has(`${key}:close`)) {
      if (await this.step(write, 'close', () => forge.closeIssue(write.repository, write.number))) {
        // Closed by the land: the card says so now, not only after the issue is read again.
        const source = (await this.requirements.find(write.requirementId))?.source ?? null;
        if (source !== null) {
          await this.requirements.applyIssueState(
            write.requirementId,
            { ...source, state: 'closed' },
            WRITE_BACK_ACTOR,
          );
        }
      }
    }
    await this.record(write, key);
    this.logger.log({ action: write.action, issue: issueName(write), msg: 'wrote back to the issue' });
  }

  /** One write to the forge; receipted when it is done (true), or refused for good (false; said in the conversation). */
  private async step(write: OwedComment, step: 'comment' | 'close', call: () => Promise<unknown>): Promise<boolean> {
    let done = true;
    try {
      await call();
    } catch (err) {
      if (!(err instanceof ForgeError) || retried(err)) {
        throw err; // the reaction is handed the events again, with backoff
      }
      this.logger.warn({
        action: write.action,
        error: err.message,
        issue: issueName(write),
        msg: 'write-back refused',
        step,
      });
      const reason = err.message.slice(0, 300);
      await this.receipts.deliver({
        args: { action: write.action, issue: issueName(write), reason },
        author: 'system',
        body: `Could not write to ${FORGE_WORDS[write.forge].name} issue ${issueName(write)} (${write.action}): ${reason}`,
        code: write.forge === 'gitlab' ? 'gitlab.issue_write_back_failed' : 'github.issue_write_back_failed',
        deliverToRd: false,
        metadata: { action: write.action, issue: issueName(write), status: err.details.status ?? null, step },
        receiptKey: `${write.receiptKey}:${step}:refused`,
        requirementId: write.requirementId,
        source: write.forge,
        triggerId: ISSUE_WRITE_BACK_TRIGGER,
      });
      done = false;
    }
    await this.record(write, `${write.receiptKey}:${step}`);
    return done;
  }

  /**
   * Whether the issue holds this write's comment already: its mark, in a comment of the token's
   * own login (anyone can write the mark; only the manager's counts), among the last week's.
   */
  private async onIssue(forge: IssueForge, write: OwedComment): Promise<boolean> {
    const me = await forge.login();
    const since = new Date(Date.now() - MARK_SEARCH_MS).toISOString().replace(/\.\d+Z$/, 'Z');
    const comments = await forge.listIssueCommentsSince(write.repository, write.number, since, 1000);
    return comments.some((comment) => comment.author === me && comment.body.includes(markerOf(write.receiptKey)));
  }

  private record(write: OwedComment, receiptKey: string): Promise<void> {
    return this.receipts.recordSeen(write.requirementId, [{ receiptKey, triggerId: ISSUE_WRITE_BACK_TRIGGER }]);
  }
}

/**
 * What a retry may cure: GitHub down, slow or out of budget, and a token it rejects (the person
 * fixes it; nothing is lost meanwhile). Any other refusal (403, 404, 410, 422) is for good.
 */
function retried(err: ForgeError): boolean {
  return (
    RETRIED.has(err.code) || (err.code === 'failed' && (err.details.status === undefined || err.details.status >= 500))
  );
}
