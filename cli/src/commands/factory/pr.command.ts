import { Command, CommandRunner, Help, Option, SubCommand } from 'nest-commander';

import { FORGES, Forge, PULL_REQUEST_STATUSES, PullRequestStatus } from '@libs/contracts';

import { ENVIRONMENT_HELP } from '@server/agent-tools/agent-context';
import { AgentOperations, RegisterPullRequestInput } from '@server/agent-tools/agent-operations';
import { printJson } from '@server/agent-tools/manager-api';
import { UsageError, parseIntegerOption } from '../../options';

@SubCommand({
  description:
    'Register a pull request (or GitLab merge request) you opened for the current Requirement (again to refresh its title, branches and head SHA)',
  name: 'register',
})
export class PrRegisterCommand extends CommandRunner {
  constructor(private readonly operations: AgentOperations) {
    super();
  }

  async run(_params: string[], flags: RegisterPullRequestInput): Promise<void> {
    printJson(await this.operations.registerPullRequest(flags, 'flags'));
  }

  @Option({
    description:
      "The PR's address, e.g. https://github.com/org/repo/pull/184 (or an MR's, https://gitlab.com/group/project/-/merge_requests/12); fills the other fields from the forge when Agent Manager has a token for it",
    flags: '--url <url>',
  })
  parseUrl(value: string): string {
    return value;
  }

  @Option({
    choices: [...FORGES],
    description: 'Where it lives when no --url says so: github (default) or gitlab',
    flags: '--forge <forge>',
  })
  parseForge(value: string): Forge {
    return value as Forge;
  }

  @Option({ description: "owner/name (GitLab: the project's full path)", flags: '--repository <owner/name>' })
  parseRepository(value: string): string {
    return value;
  }

  @Option({ description: 'The PR number', flags: '--number <n>' })
  parseNumber(value: string): number {
    return parseIntegerOption('--number', value, 1, 2_147_483_647);
  }

  @Option({ description: 'PR title', flags: '--title <title>' })
  parseTitle(value: string): string {
    return value;
  }

  @Option({ description: 'Branch it merges into', flags: '--base-branch <branch>' })
  parseBaseBranch(value: string): string {
    return value;
  }

  @Option({ description: 'Branch it merges from', flags: '--head-branch <branch>' })
  parseHeadBranch(value: string): string {
    return value;
  }

  @Option({ description: 'Head commit SHA', flags: '--head-sha <sha>' })
  parseHeadSha(value: string): string {
    return value;
  }

  @Option({
    choices: [...PULL_REQUEST_STATUSES],
    description: 'Its status now; used only the first time (afterwards GitHub decides)',
    flags: '--status <status>',
  })
  parseStatus(value: string): PullRequestStatus {
    return value as PullRequestStatus;
  }

  @Help('after')
  examples(): string {
    return `
Examples:
  code-factory-cli pr register --url https://github.com/org/repo/pull/184
  code-factory-cli pr register --url https://gitlab.com/group/project/-/merge_requests/12
  code-factory-cli pr register --url https://github.com/org/repo/pull/184 --repository org/repo --number 184 \\
    --title "Add tiered timings" --base-branch main --head-branch feature/timings \\
    --head-sha 4f2c1e9 --status open

With --url, Agent Manager asks GitHub (or GitLab) for every other field with its own token (the
agent needs none); when it has no token for that forge, give them all.
${ENVIRONMENT_HELP}`;
  }
}

@Command({
  description: 'Pull requests of the current Requirement: register',
  name: 'pr',
  subCommands: [PrRegisterCommand],
})
export class PrCommand extends CommandRunner {
  async run(): Promise<void> {
    throw new UsageError('choose one: pr register (see --help)');
  }
}
