import { Inject, Injectable, Logger } from '@nestjs/common';

import { type EventActor, LIMITS, type RequirementSource } from '@libs/contracts';

import { Clock } from '../core/clock';
import { conflict, invalid, notFound, unavailable } from '../core/errors/domain-error';
import { GITHUB_CLIENT, type GitHubClient, type GitHubIssue, type GitHubIssueComment } from '../github/github-client';
import { GitHubError } from '../github/github.errors';
import type { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import { RequirementsService } from '../requirements/requirements.service';
import { RunLifecycle } from '../runs/run-lifecycle.service';
import type { ImportIssuesDto } from './dto/import-issues.dto';
import { composeDescription } from './issue-description';
import { WorkspaceRemotes } from './workspace-remotes';

/** Comments an import reads per issue (the first ones, oldest first): enough to know what was asked. */
const COMMENTS_MAX = 50;

/** What an import made, and the starts it was asked for that were refused (each Requirement stays in todo). */
export interface ImportOutcome {
  items: RequirementResponseDto[];
  notStarted: Array<{ requirementId: string; reason: string }>;
}

/** One issue to import: where it is, and the key that makes a second import a 409. */
interface IssueRef {
  host: string;
  owner: string;
  repo: string;
  number: number;
  key: string;
}

/** What a forge said of one issue, read in full before anything is written. */
interface ReadIssue {
  ref: IssueRef;
  issue: GitHubIssue;
  comments: GitHubIssueComment[];
  moreComments: boolean;
}

/**
 * Work from the tracker (issue 49 §1): a GitHub issue of one of the workspace's remotes becomes a
 * Requirement in TODO, its title the issue's, its description the issue's text and first comments
 * (the prompt marks them as untrusted input from GitHub, never the person's words), with `source`
 * saying where it came from. Every issue is read before the first Requirement is made: a forge
 * that fails leaves nothing half-imported; an issue already imported is a 409 naming its Requirement.
 */
@Injectable()
export class IssueImport {
  private readonly logger = new Logger(IssueImport.name);
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly clock: Clock,
    @Inject(GITHUB_CLIENT) private readonly github: GitHubClient,
    private readonly lifecycle: RunLifecycle,
    private readonly requirements: RequirementsService,
    private readonly remotes: WorkspaceRemotes,
  ) {}

  /**
   * One import at a time: its check that no issue was imported yet holds until its Requirements
   * exist, so two imports of the same issue give one 201 and one 409, never half of each.
   */
  import(body: ImportIssuesDto, actor: EventActor): Promise<ImportOutcome> {
    const turn = this.queue.then(() => this.importNow(body, actor));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private async importNow(body: ImportIssuesDto, actor: EventActor): Promise<ImportOutcome> {
    const { numbers, repository, start, url, ...options } = body;
    const refs = await this.refsOf({ numbers, repository, url });
    const imported = await this.requirements.importedAsMany(refs.map((ref) => ref.key));
    for (const ref of refs) {
      const existing = imported.get(ref.key);
      if (existing !== undefined) {
        throw conflict(
          'already_imported',
          `${ref.owner}/${ref.repo}#${ref.number} is already Requirement ${existing}`,
          [existing],
        );
      }
    }
    if (!this.github.configured) {
      throw conflict(
        'github_token_missing',
        'Agent Manager has no GitHub token to read issues with: set GITHUB_TOKEN or GH_TOKEN for it, or log in with `gh auth login`, then restart it',
      );
    }
    const read: ReadIssue[] = [];
    for (const ref of refs) {
      read.push(await this.read(ref));
    }
    const created: RequirementResponseDto[] = [];
    for (const { comments, issue, moreComments, ref } of read) {
      const source: RequirementSource = {
        author: issue.author,
        forge: 'github',
        importedAt: this.clock.nowIso(),
        labels: issue.labels,
        number: issue.number,
        repository: `${ref.owner}/${ref.repo}`,
        state: issue.state,
        title: issue.title,
        url: issue.url,
      };
      const title = oneLine(issue.title).slice(0, LIMITS.titleLength) || `Issue #${issue.number}`;
      created.push(
        await this.requirements.create(
          {
            ...options,
            createdBy: 'human',
            description: composeDescription(issue, comments, moreComments),
            source: { key: ref.key, value: source },
            title,
          },
          actor,
        ),
      );
      this.logger.log({ issue: ref.key, msg: 'issue imported', requirementId: created[created.length - 1].id });
    }
    const notStarted: Array<{ requirementId: string; reason: string }> = [];
    if (start === true) {
      // Each made already: a start that is refused leaves its Requirement in todo, and says why.
      for (const requirement of created) {
        await this.lifecycle.start(requirement.id, {}, actor).catch((err: unknown) => {
          notStarted.push({ reason: (err as Error).message, requirementId: requirement.id });
        });
      }
    }
    const items = start === true ? await Promise.all(created.map((r) => this.requirements.get(r.id))) : created;
    return { items, notStarted };
  }

  /** The issues asked for, each of a repository among the workspace's GitHub remotes; 400 otherwise. */
  private async refsOf(asked: Pick<ImportIssuesDto, 'numbers' | 'repository' | 'url'>): Promise<IssueRef[]> {
    const hosts = this.remotes.hosts();
    let wanted: { host: string | null; owner: string; repo: string; numbers: number[] };
    if (asked.url !== undefined) {
      if (asked.repository !== undefined || asked.numbers !== undefined) {
        throw invalid('import_ambiguous', 'give either url, or repository and numbers, not both');
      }
      wanted = parseIssueUrl(asked.url, hosts);
    } else if (asked.repository !== undefined && asked.numbers !== undefined) {
      const [owner, repo] = asked.repository.split('/');
      wanted = { host: null, numbers: [...new Set(asked.numbers)], owner, repo };
    } else {
      throw invalid('import_incomplete', 'give an issue’s url, or repository and numbers');
    }
    const remote = await this.remotes.find(wanted);
    return wanted.numbers.map((number) => ({
      host: remote.host,
      key: issueKey(remote.owner, remote.repo, number),
      number,
      owner: remote.owner,
      repo: remote.repo,
    }));
  }

  /** One issue and its first comments; what GitHub's failures mean to the person asking. */
  private async read(ref: IssueRef): Promise<ReadIssue> {
    const name = `${ref.owner}/${ref.repo}#${ref.number}`;
    try {
      const issue = await this.github.getIssue(ref.owner, ref.repo, ref.number);
      if (issue.pullRequest) {
        throw invalid('not_an_issue', `${name} is a pull request, not an issue`);
      }
      const { comments, more } = await this.github.listIssueComments(ref.owner, ref.repo, ref.number, COMMENTS_MAX);
      return { comments, issue, moreComments: more, ref };
    } catch (err) {
      if (err instanceof GitHubError && err.code === 'not_found') {
        throw notFound('issue_not_found', `GitHub has no issue ${name} (or the token cannot see it)`);
      }
      throw fromGitHubError(err, name, '; nothing was imported');
    }
  }
}

/** `github:owner/repo#12`, lower case: what makes an issue's second import a 409. */
export function issueKey(owner: string, repo: string, number: number): string {
  return `github:${owner}/${repo}#${number}`.toLowerCase();
}

/**
 * What GitHub's refusal means to the person asking: a token GitHub rejects or that may not read
 * the repository is theirs to fix (409); what a retry may cure (down, slow, out of budget) is a
 * 503 with when to try again. Other errors as they are.
 */
export function fromGitHubError(err: unknown, what: string, consequence = ''): Error {
  if (!(err instanceof GitHubError)) {
    return err as Error;
  }
  if (err.code === 'unauthorized') {
    return conflict(
      'github_token_rejected',
      `GitHub rejected the token reading ${what}${consequence}: give Agent Manager a valid one (GITHUB_TOKEN, GH_TOKEN or \`gh auth login\`) and restart it`,
    );
  }
  if (err.code === 'forbidden') {
    return conflict(
      'github_forbidden',
      `GitHub refused the token ${what}${consequence}: it needs read access to the repository's issues (${err.message})`,
    );
  }
  if (err.details.status === 410) {
    return notFound('issue_gone', `GitHub says ${what} is gone (deleted, or issues are turned off)${consequence}`);
  }
  const when =
    err.details.resetAt ?? (err.details.retryAfterMs ? `${Math.ceil(err.details.retryAfterMs / 1000)} s` : null);
  return unavailable(
    'forge_unavailable',
    `GitHub could not be read for ${what}: ${err.message}${consequence}${when === null ? ', try again shortly' : `, try again after ${when}`}`,
  );
}

/** `https://HOST/OWNER/REPO/issues/N` (a fragment or query allowed) on one of `hosts`; 400 for anything else. */
export function parseIssueUrl(
  raw: string,
  hosts: readonly string[],
): { host: string; owner: string; repo: string; numbers: number[] } {
  let parsed: URL;
  try {
    parsed = new URL(raw.trim());
  } catch {
    throw invalid('not_an_issue_url', `${raw.slice(0, 200)} is not a web address`);
  }
  const host = parsed.hostname.toLowerCase();
  const match = /^\/([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)\/issues\/([1-9]\d{0,9})\/?$/.exec(parsed.pathname);
  if (!/^https?:$/.test(parsed.protocol) || !hosts.includes(host) || match === null) {
    throw invalid(
      'not_an_issue_url',
      `${raw.slice(0, 200)} is not the address of an issue on ${hosts.join(' or ')} (https://${hosts[0]}/OWNER/REPO/issues/NUMBER)`,
    );
  }
  return { host, numbers: [Number(match[3])], owner: match[1], repo: match[2] };
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
