import { Command, CommandRunner, Help, Option, SubCommand } from 'nest-commander';

import { PULL_REQUEST_STATUSES, PullRequestStatus } from '@libs/contracts';

import { ENVIRONMENT_HELP } from '../../factory/agent-context';
import { ManagerApi, printJson } from '../../factory/manager-api';
import { PullRequestFields, PullRequestLookup, parsePullRequestUrl } from '../../factory/pull-request-lookup';
import { UsageError, parseIntegerOption } from '../../options';

interface RegisterFlags extends Partial<PullRequestFields> {
  url?: string;
}

// In the order a person reads them in an error.
const FLAG_OF: Record<keyof PullRequestFields, string> = {
  repository: '--repository',
  number: '--number',
  url: '--url',
  title: '--title',
  baseBranch: '--base-branch',
  headBranch: '--head-branch',
  headSha: '--head-sha',
  status: '--status',
};

@SubCommand({ description: 'Register a pull request you opened for the current Requirement (again to refresh its title, branches and head SHA)', name: 'register' })
export class PrRegisterCommand extends CommandRunner {
  constructor(
    private readonly api: ManagerApi,
    private readonly lookup: PullRequestLookup,
  ) {
    super();
  }

  async run(_params: string[], flags: RegisterFlags): Promise<void> {
    const { context } = this.api;
    let fields: Partial<PullRequestFields> = {};
    if (flags.url) {
      const parsed = parsePullRequestUrl(flags.url);
      // Flags given explicitly win over what GitHub says.
      fields = { ...parsed, ...(await this.lookup.find(parsed)) };
    }
    const defined = Object.fromEntries(Object.entries(flags).filter(([, value]) => value !== undefined)) as Partial<PullRequestFields>;
    fields = { ...fields, ...defined };
    const missing = (Object.keys(FLAG_OF) as Array<keyof PullRequestFields>).filter((key) => fields[key] === undefined);
    if (missing.length > 0) {
      const hint = flags.url ? ' (GitHub was not asked: no GITHUB_TOKEN, GH_TOKEN or `gh auth token`)' : ' (or pass --url with a GitHub token available)';
      throw new UsageError(`missing ${missing.map((key) => FLAG_OF[key]).join(', ')}${this.lookup.lastLookupSkipped || !flags.url ? hint : ''}`);
    }
    const complete = fields as PullRequestFields;
    const pullRequest = await this.api.call('pr register', (client, signal) =>
      client.POST('/api/agent/pull-requests', { body: { ...complete, requirementId: context.requirementId }, signal }),
    );
    printJson(pullRequest);
  }

  @Option({ description: "The PR's address, e.g. https://github.com/org/repo/pull/184; fills the other fields from GitHub when a token is available", flags: '--url <url>' })
  parseUrl(value: string): string {
    return value;
  }

  @Option({ description: 'owner/name', flags: '--repository <owner/name>' })
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

  @Option({ choices: [...PULL_REQUEST_STATUSES], description: 'Its status now; used only the first time (afterwards GitHub decides)', flags: '--status <status>' })
  parseStatus(value: string): PullRequestStatus {
    return value as PullRequestStatus;
  }

  @Help('after')
  examples(): string {
    return `
Examples:
  code-factory-cli pr register --url https://github.com/org/repo/pull/184
  code-factory-cli pr register --url https://github.com/org/repo/pull/184 --repository org/repo --number 184 \\
    --title "Add tiered timings" --base-branch main --head-branch feature/timings \\
    --head-sha 4f2c1e9 --status open

With --url and a GitHub token (GITHUB_TOKEN, GH_TOKEN, or a logged-in gh), every other field
comes from GitHub (GitHub Enterprise: set CODE_FACTORY_GITHUB_API_URL); without one, give them all.
${ENVIRONMENT_HELP}`;
  }
}

@Command({ description: 'Pull requests of the current Requirement: register', name: 'pr', subCommands: [PrRegisterCommand] })
export class PrCommand extends CommandRunner {
  async run(): Promise<void> {
    throw new UsageError('choose one: pr register (see --help)');
  }
}
