import * as fs from 'node:fs';

import { Command, CommandRunner, Help, Option, SubCommand } from 'nest-commander';

import {
  AGENT_REQUIREMENT_ACTIONS,
  DEPENDENCY_CONDITIONS,
  DependencyCondition,
  LIMITS,
  PROVIDERS,
  Provider,
  REASONING_EFFORTS,
  ReasoningEffort,
} from '@libs/contracts';

import { ENVIRONMENT_HELP } from '@server/agent-tools/agent-context';
import { AgentOperations } from '@server/agent-tools/agent-operations';
import { printJson } from '@server/agent-tools/manager-api';
import { UsageError, parseIntegerOption } from '../../options';

interface ProposeFlags {
  title?: string;
  description?: string;
  descriptionFile?: string;
  provider?: Provider;
  model?: string;
  reasoningEffort?: ReasoningEffort;
  start?: boolean;
  dependsOn?: Array<{ requirementId: string; until: DependencyCondition }>;
  autoStart?: boolean;
  autoReview?: Provider | true;
  autoReviewRounds?: number;
  budgetTokens?: number;
  budgetUsd?: number;
}

@SubCommand({
  description: 'Propose a follow-up Requirement as a child of the current one (todo unless --start)',
  name: 'propose',
})
export class RequirementProposeCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(_params: string[], flags: ProposeFlags): Promise<void> {
    if (!flags.title?.trim()) {
      throw new UsageError('--title is required');
    }
    if ((flags.description === undefined) === (flags.descriptionFile === undefined)) {
      throw new UsageError('give exactly one of --description and --description-file');
    }
    const description =
      flags.descriptionFile !== undefined ? readDescription(flags.descriptionFile) : (flags.description as string);
    const autoReview =
      flags.autoReview === undefined && flags.autoReviewRounds === undefined
        ? undefined
        : {
            ...(typeof flags.autoReview === 'string' && { provider: flags.autoReview }),
            ...(flags.autoReviewRounds !== undefined && { maxRounds: flags.autoReviewRounds }),
          };
    printJson(
      await this.operations.propose({
        autoReview,
        autoStart: flags.autoStart,
        ...((flags.budgetTokens !== undefined || flags.budgetUsd !== undefined) && {
          budget: { maxCostUsd: flags.budgetUsd, maxTokens: flags.budgetTokens },
        }),
        dependsOn: flags.dependsOn,
        description,
        model: flags.model,
        provider: flags.provider,
        reasoningEffort: flags.reasoningEffort,
        start: flags.start,
        title: flags.title,
      }),
    );
  }

  @Option({ description: `Short title (at most ${LIMITS.titleLength} characters)`, flags: '--title <title>' })
  parseTitle(value: string): string {
    return value;
  }

  @Option({ description: 'What to build, in Markdown', flags: '--description <text>' })
  parseDescription(value: string): string {
    return value;
  }

  @Option({
    description: 'Read the description from this file (for long ones); "-" reads stdin',
    flags: '--description-file <path>',
  })
  parseDescriptionFile(value: string): string {
    return value;
  }

  @Option({
    choices: [...PROVIDERS],
    description: "Agent for the new Requirement (default: the current one's)",
    flags: '--provider <provider>',
  })
  parseProvider(value: string): string {
    return value;
  }

  @Option({
    description: "Model for the new Requirement (default: the current one's when --provider is not given)",
    flags: '--model <model>',
  })
  parseModel(value: string): string {
    return value;
  }

  @Option({
    choices: [...REASONING_EFFORTS],
    description: 'Reasoning effort (default as for --model)',
    flags: '--reasoning-effort <effort>',
  })
  parseReasoningEffort(value: string): string {
    return value;
  }

  @Option({ description: 'Start its RD session at once instead of leaving it todo', flags: '--start' })
  parseStart(): boolean {
    return true;
  }

  @Option({
    description:
      'Wait for this Requirement: until its pull requests are merged (the default) or it is confirmed done; repeat for several',
    flags: '--depends-on <requirementId[:merged|done]>',
  })
  parseDependsOn(value: string, previous: ProposeFlags['dependsOn'] = []): ProposeFlags['dependsOn'] {
    const [requirementId = '', until = 'merged'] = value.split(':');
    if (!requirementId || !(DEPENDENCY_CONDITIONS as readonly string[]).includes(until)) {
      throw new UsageError(
        `--depends-on takes <requirementId> or <requirementId>:merged or <requirementId>:done, not "${value}"`,
      );
    }
    return [...(previous ?? []), { requirementId, until: until as DependencyCondition }];
  }

  @Option({ description: 'With --depends-on: start on its own once every dependency is met', flags: '--auto-start' })
  parseAutoStart(): boolean {
    return true;
  }

  @Option({
    description:
      'Have each new head of its open PRs reviewed by another model (this provider; default: the other one) until a review finds nothing',
    flags: '--auto-review [provider]',
  })
  parseAutoReview(value: string | undefined): Provider | true {
    if (value === undefined) {
      return true;
    }
    if (!(PROVIDERS as readonly string[]).includes(value)) {
      throw new UsageError(`--auto-review takes ${PROVIDERS.join(' or ')}, not "${value}"`);
    }
    return value as Provider;
  }

  @Option({
    description: `With or without --auto-review: at most this many review rounds per PR (1–${LIMITS.autoReviewMaxRounds}, default 3)`,
    flags: '--auto-review-rounds <n>',
  })
  parseAutoReviewRounds(value: string): number {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < 1 || n > LIMITS.autoReviewMaxRounds) {
      throw new UsageError(
        `--auto-review-rounds takes a whole number from 1 to ${LIMITS.autoReviewMaxRounds}, not "${value}"`,
      );
    }
    return n;
  }

  @Option({
    description:
      'Budget: tokens (input + output) its runs may use, at most what the current Requirement\'s tree has left (more is lowered, with warnings: ["budget_clamped"]); without --budget-* it gets that, or the workspace\'s default budget',
    flags: '--budget-tokens <n>',
  })
  parseBudgetTokens(value: string): number {
    return parseIntegerOption('--budget-tokens', value, 1, LIMITS.budgetMaxTokens);
  }

  @Option({
    description:
      "Budget: US dollars its runs may cost (where the provider reports a cost), at most what the current Requirement's tree has left",
    flags: '--budget-usd <amount>',
  })
  parseBudgetUsd(value: string): number {
    const amount = /^\d{1,7}(\.\d{1,4})?$/.test(value) ? Number(value) : NaN;
    if (!(amount >= 0.01 && amount <= LIMITS.budgetMaxCostUsd)) {
      throw new UsageError(`--budget-usd takes an amount from 0.01 to ${LIMITS.budgetMaxCostUsd}, not "${value}"`);
    }
    return amount;
  }

  @Help('after')
  examples(): string {
    return `
Examples:
  code-factory-cli requirement propose --title "Add a performance benchmark" \\
    --description "Track throughput and peak memory as a separate follow-up"
  code-factory-cli requirement propose --title "Split the parser" --description-file plan.md --start
  code-factory-cli requirement propose --title "Use the new API" --description "…" \\
    --depends-on req_… --auto-start
  code-factory-cli requirement propose --title "Try the cache" --description "…" --budget-tokens 200000
${ENVIRONMENT_HELP}`;
  }
}

interface ActionFlags {
  requirementId?: string;
  start?: boolean;
  stop?: boolean;
  delete?: boolean;
  done?: boolean;
}

@SubCommand({
  description: 'Start, stop, delete (todo only) or mark done (waiting for confirmation) a Requirement you proposed',
  name: 'action',
})
export class RequirementActionCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(_params: string[], flags: ActionFlags): Promise<void> {
    if (!flags.requirementId) {
      throw new UsageError('--requirement-id is required');
    }
    const chosen = AGENT_REQUIREMENT_ACTIONS.filter((action) => flags[action] === true);
    if (chosen.length !== 1) {
      throw new UsageError('give exactly one of --start, --stop, --delete, --done');
    }
    printJson(await this.operations.act(flags.requirementId, chosen[0]));
  }

  @Option({ description: 'The child Requirement (req_…) this session proposed', flags: '--requirement-id <id>' })
  parseRequirementId(value: string): string {
    return value;
  }

  @Option({ description: 'Start (or retry) its RD session', flags: '--start' })
  parseStart(): boolean {
    return true;
  }

  @Option({ description: 'Stop its running RD run', flags: '--stop' })
  parseStop(): boolean {
    return true;
  }

  @Option({ description: 'Withdraw it (only while todo)', flags: '--delete' })
  parseDelete(): boolean {
    return true;
  }

  @Option({ description: 'Accept it as done (only while waiting for confirmation)', flags: '--done' })
  parseDone(): boolean {
    return true;
  }

  @Help('after')
  examples(): string {
    return `
Examples:
  code-factory-cli requirement action --requirement-id req_… --start
  code-factory-cli requirement action --requirement-id req_… --done
${ENVIRONMENT_HELP}`;
  }
}

@SubCommand({
  description: "Show the current Requirement's direct parent and children: {parent, children}",
  name: 'related',
})
export class RequirementRelatedCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.operations.related());
  }

  @Help('after')
  examples(): string {
    return `
Example:
  code-factory-cli requirement related
${ENVIRONMENT_HELP}`;
  }
}

@SubCommand({
  description:
    'Show the conflict radar for the current Requirement: whether its branch merges cleanly onto its base, the conflicting files, the other live Requirements it conflicts with, and what to do',
  name: 'landing',
})
export class RequirementLandingCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.operations.landing());
  }

  @Help('after')
  examples(): string {
    return `
Example:
  code-factory-cli requirement landing

The answer: {requirementId, title, isolation, baseRef, branch, landing: {mergesCleanly,
conflictPaths, conflictsWith: [{requirementId, title, paths}], behindBy, baseSha, headSha,
checkedAt, landedAt, landedMethod, landedCommit}, summary}. When mergesCleanly is false, rebase
onto baseRef in your worktree and resolve conflictPaths before anyone asks you to.
${ENVIRONMENT_HELP}`;
  }
}

interface MessageFlags {
  requirementId?: string;
  message?: string;
}

@SubCommand({
  description: 'Send a message to the direct parent or a direct child; it starts that agent or waits behind its run',
  name: 'message',
})
export class RequirementMessageCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(_params: string[], flags: MessageFlags): Promise<void> {
    if (!flags.requirementId) {
      throw new UsageError('--requirement-id is required');
    }
    if (!flags.message?.trim()) {
      throw new UsageError('--message is required');
    }
    printJson(await this.operations.message(flags.requirementId, flags.message));
  }

  @Option({ description: 'The parent or child Requirement (req_…) to message', flags: '--requirement-id <id>' })
  parseRequirementId(value: string): string {
    return value;
  }

  @Option({ description: 'The message text', flags: '--message <text>' })
  parseMessage(value: string): string {
    return value;
  }

  @Help('after')
  examples(): string {
    return `
Example:
  code-factory-cli requirement message --requirement-id req_… --message "Use contract version 2."
${ENVIRONMENT_HELP}`;
  }
}

@Command({
  description:
    "Follow-up Requirements: propose, act on the ones you proposed, see and message related ones; the current one's conflict radar",
  name: 'requirement',
  subCommands: [
    RequirementProposeCommand,
    RequirementActionCommand,
    RequirementRelatedCommand,
    RequirementMessageCommand,
    RequirementLandingCommand,
  ],
})
export class RequirementCommand extends CommandRunner {
  async run(): Promise<void> {
    throw new UsageError('choose one: requirement propose | action | related | message | landing (see --help)');
  }
}

function readDescription(file: string): string {
  try {
    const content = fs.readFileSync(file === '-' ? 0 : file, 'utf8');
    if (content.length > LIMITS.descriptionLength) {
      throw new UsageError(`the description in ${file} is longer than ${LIMITS.descriptionLength} characters`);
    }
    return content;
  } catch (err) {
    if (err instanceof UsageError) {
      throw err;
    }
    throw new UsageError(
      `cannot read --description-file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}
