import { Inject, Injectable, Logger } from '@nestjs/common';

import type { ManagerEvent } from '@libs/contracts';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { RUNTIME, type Runtime } from '../core/runtime';
import { OnCommitted } from '../events/on-committed';
import { GITHUB_CLIENT, type GitHubClient } from '../github/github-client';
import { GitHubError } from '../github/github.errors';
import { RequirementsService } from '../requirements/requirements.service';
import { TriggerDeliveryService } from '../triggers/trigger-delivery.service';
import {
  ISSUE_WRITE_BACK_TRIGGER,
  type OwedComment,
  issueName,
  pullRequestWriteBack,
  writeBacksOf,
} from './issue-write-back';

/** GitHub's answers a retry may cure: the reaction is handed the events again, with backoff. */
const RETRIED: ReadonlySet<string> = new Set(['rate_limited', 'timeout', 'network', 'failed']);

/**
 * Writes back to the issue an imported Requirement came from (issue 49 §3, `intakeWriteBack`): a
 * comment when its agent starts work and when a PR of the issue's repository is registered; a
 * local land comments with the commit and closes the issue; a cancellation comments only in
 * `work_and_cancel`. A reaction over the committed events, so a crash or a GitHub outage loses
 * nothing: each comment's receipt is taken after GitHub accepted it (a retry sees it and skips),
 * one comment at a time. What GitHub refuses for good (the token may not write issues, the issue
 * is gone) is said once in the Requirement's conversation and not retried. Team mode: the leader
 * writes.
 */
@Injectable()
export class IssueWriteBack {
  private readonly logger = new Logger(IssueWriteBack.name);
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly configuration: ConfigurationService,
    @Inject(GITHUB_CLIENT) private readonly github: GitHubClient,
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
    if (mode === 'off' || !this.github.configured || (this.runtime.board && !this.runtime.board.leads)) {
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
    for (const write of owed) {
      await this.write(write);
    }
  }

  private async write(write: OwedComment): Promise<void> {
    const seen = await this.receipts.seenKeys(write.requirementId, write.receiptKey);
    if (seen.has(write.receiptKey)) {
      return;
    }
    const occurrence = { receiptKey: write.receiptKey, triggerId: ISSUE_WRITE_BACK_TRIGGER };
    try {
      if (!seen.has(`${write.receiptKey}:comment`)) {
        await this.github.commentOnIssue(write.owner, write.repo, write.number, write.body);
        // Apart from the close, so that a close GitHub fails is retried without a second comment.
        await this.receipts.recordSeen(write.requirementId, [
          { ...occurrence, receiptKey: `${write.receiptKey}:comment` },
        ]);
      }
      if (write.close) {
        await this.github.closeIssue(write.owner, write.repo, write.number);
      }
      await this.receipts.recordSeen(write.requirementId, [occurrence]);
      this.logger.log({ action: write.action, issue: issueName(write), msg: 'wrote back to the issue' });
    } catch (err) {
      if (!(err instanceof GitHubError) || RETRIED.has(err.code)) {
        throw err;
      }
      // Refused for good: said once in the conversation (the person fixes the token or lets it be).
      this.logger.warn({
        action: write.action,
        error: err.message,
        issue: issueName(write),
        msg: 'write-back refused',
      });
      await this.receipts.deliver({
        args: { action: write.action, issue: issueName(write), reason: err.message.slice(0, 300) },
        author: 'system',
        body: `Could not write to GitHub issue ${issueName(write)} (${write.action}): ${err.message.slice(0, 300)}`,
        code: 'github.issue_write_back_failed',
        deliverToRd: false,
        metadata: { action: write.action, issue: issueName(write), status: err.details.status ?? null },
        receiptKey: write.receiptKey,
        requirementId: write.requirementId,
        source: 'github',
        triggerId: ISSUE_WRITE_BACK_TRIGGER,
      });
    }
  }
}
