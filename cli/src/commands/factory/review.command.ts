import { Command, CommandRunner, Help, Option, SubCommand } from 'nest-commander';

import { LIMITS } from '@libs/contracts';

import { ENVIRONMENT_HELP } from '@server/agent-tools/agent-context';
import { AgentOperations } from '@server/agent-tools/agent-operations';
import { printJson } from '@server/agent-tools/manager-api';
import { UsageError } from '../../options';

@SubCommand({
  description: "List the review comments the person sent on the current Requirement's changes, with their threads",
  name: 'comments',
})
export class ReviewCommentsCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.operations.reviewComments());
  }

  @Help('after')
  examples(): string {
    return `
Example:
  code-factory-cli review comments

Each comment: its id (rvc_…), path, line and endLine (side "new": your work; "old": the merge base),
the quoted lines (anchor.excerpt), the comment, its state (sent, resolved, outdated: the lines
changed since it was written) and the replies.
${ENVIRONMENT_HELP}`;
  }
}

interface ReplyFlags {
  id?: string;
  body?: string;
  resolve?: boolean;
}

@SubCommand({ description: 'Answer a review comment in its thread; --resolve once it is done', name: 'reply' })
export class ReviewReplyCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(_params: string[], flags: ReplyFlags): Promise<void> {
    if (!flags.id) {
      throw new UsageError('--id is required');
    }
    if (!flags.body?.trim()) {
      throw new UsageError('--body is required');
    }
    if (Buffer.byteLength(flags.body, 'utf8') > LIMITS.reviewReplyBytes) {
      throw new UsageError(`--body is over ${LIMITS.reviewReplyBytes} bytes`);
    }
    printJson(await this.operations.replyToReviewComment(flags.id, flags.body, flags.resolve));
  }

  @Option({
    description: 'The review comment (rvc_…), as `review comments` or the review message names it',
    flags: '--id <commentId>',
  })
  parseId(value: string): string {
    return value;
  }

  @Option({
    description: `Your answer, in Markdown (at most ${LIMITS.reviewReplyBytes} bytes)`,
    flags: '--body <text>',
  })
  parseBody(value: string): string {
    return value;
  }

  @Option({ description: 'Resolve the thread with this answer', flags: '--resolve' })
  parseResolve(): boolean {
    return true;
  }

  @Help('after')
  examples(): string {
    return `
Examples:
  code-factory-cli review reply --id rvc_… --body "Renamed it; the callers use the new name."
  code-factory-cli review reply --id rvc_… --body "Done in 3f2a91c." --resolve
${ENVIRONMENT_HELP}`;
  }
}

@Command({
  description: "The person's review comments on the current Requirement's changes: comments, reply",
  name: 'review',
  subCommands: [ReviewCommentsCommand, ReviewReplyCommand],
})
export class ReviewCommand extends CommandRunner {
  async run(): Promise<void> {
    throw new UsageError('choose one: review comments | reply (see --help)');
  }
}
