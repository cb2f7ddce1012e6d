import { Injectable, Logger } from '@nestjs/common';

import { type EventActor, type Forge, LIMITS, type RequirementSource } from '@libs/contracts';

import { Clock } from '../core/clock';
import { conflict, invalid, notFound, unavailable } from '../core/errors/domain-error';
import { ForgeError } from '../forges/forge.errors';
import type { ForgeIssue, ForgeIssueComment, IssueForge } from '../forges/forge-issues';
import { FORGE_WORDS, ForgeRegistry } from '../forges/pull-request-forge';
import type { ForgeHosts } from '../landing/forge-remote';
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
  forge: Forge;
  host: string;
  /** `owner/repo`, or GitLab's project path, as the workspace's remote spells it. */
  repository: string;
  number: number;
  key: string;
}

/** How a forge's issue is named: `acme/widgets#12` (GitLab writes issues with `#` too). */
const nameOf = (ref: Pick<IssueRef, 'repository' | 'number'>) => `${ref.repository}#${ref.number}`;

/** What a forge said of one issue, read in full before anything is written. */
interface ReadIssue {
  ref: IssueRef;
  issue: ForgeIssue;
  comments: ForgeIssueComment[];
  moreComments: boolean;
}

/**
 * Work from the tracker (issue 49 §1, §5): a GitHub or GitLab issue of one of the workspace's
 * remotes becomes a Requirement in TODO, its title the issue's, its description the issue's text
 * and first comments (the prompt marks them as untrusted input from the forge, never the person's words), with `source`
 * saying where it came from. Every issue is read before the first Requirement is made: a forge
 * that fails leaves nothing half-imported; an issue already imported is a 409 naming its Requirement.
 */
@Injectable()
export class IssueImport {
  private readonly logger = new Logger(IssueImport.name);
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly clock: Clock,
    private readonly forges: ForgeRegistry,
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
    const { forge, numbers, repository, start, url, ...options } = body;
    const refs = await this.refsOf({ forge, numbers, repository, url });
    const imported = await this.requirements.importedAsMany(refs.map((ref) => ref.key));
    for (const ref of refs) {
      const existing = imported.get(ref.key);
      if (existing !== undefined) {
        throw conflict('already_imported', `${nameOf(ref)} is already Requirement ${existing}`, [existing]);
      }
    }
    const read: ReadIssue[] = [];
    for (const ref of refs) {
      read.push(await this.read(issueForge(this.forges, ref.forge), ref));
    }
    const created: RequirementResponseDto[] = [];
    for (const { comments, issue, moreComments, ref } of read) {
      const source: RequirementSource = {
        author: issue.author,
        forge: ref.forge,
        importedAt: this.clock.nowIso(),
        labels: issue.labels,
        number: issue.number,
        repository: ref.repository,
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

  /** The issues asked for, each of a repository among the workspace's GitHub or GitLab remotes; 400 otherwise. */
  private async refsOf(asked: Pick<ImportIssuesDto, 'forge' | 'numbers' | 'repository' | 'url'>): Promise<IssueRef[]> {
    let wanted: { forge?: Forge; host: string | null; repository: string; numbers: number[] };
    if (asked.url !== undefined) {
      if (asked.repository !== undefined || asked.numbers !== undefined || asked.forge !== undefined) {
        throw invalid('import_ambiguous', 'give either url, or repository and numbers, not both');
      }
      wanted = parseIssueUrl(asked.url, this.remotes.hosts());
    } else if (asked.repository !== undefined && asked.numbers !== undefined) {
      wanted = { forge: asked.forge, host: null, numbers: [...new Set(asked.numbers)], repository: asked.repository };
    } else {
      throw invalid('import_incomplete', 'give an issue’s url, or repository and numbers');
    }
    const remote = await this.remotes.find(wanted);
    const repository = `${remote.owner}/${remote.repo}`;
    return wanted.numbers.map((number) => ({
      forge: remote.forge,
      host: remote.host,
      key: issueKey(remote.forge, repository, number),
      number,
      repository,
    }));
  }

  /** One issue and its first comments; what the forge's failures mean to the person asking. */
  private async read(forge: IssueForge, ref: IssueRef): Promise<ReadIssue> {
    const name = nameOf(ref);
    try {
      const issue = await forge.getIssue(ref.repository, ref.number);
      if (issue.pullRequest) {
        throw invalid('not_an_issue', `${name} is a pull request, not an issue`);
      }
      const { comments, more } = await forge.listIssueComments(ref.repository, ref.number, COMMENTS_MAX);
      return { comments, issue, moreComments: more, ref };
    } catch (err) {
      if (err instanceof ForgeError && err.code === 'not_found') {
        throw notFound(
          'issue_not_found',
          `${FORGE_WORDS[ref.forge].name} has no issue ${name} (or the token cannot see it)`,
        );
      }
      throw fromForgeError(ref.forge, err, name, '; nothing was imported');
    }
  }
}

/**
 * The forge's issue client, or 409 `<forge>_token_missing` when it has no token: the person's to
 * fix, said before anything is read.
 */
export function issueForge(forges: ForgeRegistry, kind: Forge): IssueForge {
  const forge = forges.get(kind);
  if (forge?.configured !== true) {
    throw conflict(
      `${kind}_token_missing`,
      kind === 'gitlab'
        ? 'Agent Manager has no GitLab token to read issues with: set GITLAB_TOKEN for it, or log in with `glab auth login`, then restart it'
        : 'Agent Manager has no GitHub token to read issues with: set GITHUB_TOKEN or GH_TOKEN for it, or log in with `gh auth login`, then restart it',
    );
  }
  return forge;
}

/** `github:owner/repo#12` (`gitlab:group/project#12`), lower case: what makes an issue's second import a 409. */
export function issueKey(forge: Forge, repository: string, number: number): string {
  return `${forge}:${repository}#${number}`.toLowerCase();
}

/**
 * What a forge's refusal means to the person asking: a token it rejects or that may not read the
 * repository is theirs to fix (409); what a retry may cure (down, slow, out of budget) is a 503
 * with when to try again. Other errors as they are.
 */
export function fromForgeError(forge: Forge, err: unknown, what: string, consequence = ''): Error {
  if (!(err instanceof ForgeError)) {
    return err as Error;
  }
  const name = FORGE_WORDS[forge].name;
  if (err.code === 'unauthorized') {
    const how = forge === 'gitlab' ? 'GITLAB_TOKEN or `glab auth login`' : 'GITHUB_TOKEN, GH_TOKEN or `gh auth login`';
    return conflict(
      `${forge}_token_rejected`,
      `${name} rejected the token reading ${what}${consequence}: give Agent Manager a valid one (${how}) and restart it`,
    );
  }
  if (err.code === 'forbidden') {
    return conflict(
      `${forge}_forbidden`,
      `${name} refused the token ${what}${consequence}: it needs read access to the repository's issues (${err.message})`,
    );
  }
  if (err.details.status === 410) {
    return notFound('issue_gone', `${name} says ${what} is gone (deleted, or issues are turned off)${consequence}`);
  }
  const when =
    err.details.resetAt ?? (err.details.retryAfterMs ? `${Math.ceil(err.details.retryAfterMs / 1000)} s` : null);
  return unavailable(
    'forge_unavailable',
    `${name} could not be read for ${what}: ${err.message}${consequence}${when === null ? ', try again shortly' : `, try again after ${when}`}`,
  );
}

/**
 * An issue's web address (a fragment or query allowed) on one of the forges' hosts: GitHub's
 * `https://HOST/OWNER/REPO/issues/N`, GitLab's `https://HOST/GROUP[/SUBGROUP…]/PROJECT/-/issues/N`;
 * 400 for anything else.
 */
export function parseIssueUrl(
  raw: string,
  hosts: Required<ForgeHosts>,
): { forge: Forge; host: string; repository: string; numbers: number[] } {
  let parsed: URL;
  try {
    parsed = new URL(raw.trim());
  } catch {
    throw invalid('not_an_issue_url', `${raw.slice(0, 200)} is not a web address`);
  }
  const host = parsed.hostname.toLowerCase();
  const web = /^https?:$/.test(parsed.protocol);
  const github = /^\/([A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+)\/issues\/([1-9]\d{0,9})\/?$/.exec(parsed.pathname);
  if (web && hosts.github.includes(host) && github !== null) {
    return { forge: 'github', host, numbers: [Number(github[2])], repository: github[1] };
  }
  const gitlab = /^\/((?:[A-Za-z0-9_.-]+\/){1,20}[A-Za-z0-9_.-]+)\/-\/issues\/([1-9]\d{0,9})\/?$/.exec(parsed.pathname);
  if (web && hosts.gitlab.includes(host) && gitlab !== null && !gitlab[1].split('/').some((s) => /^\.+$/.test(s))) {
    return { forge: 'gitlab', host, numbers: [Number(gitlab[2])], repository: gitlab[1] };
  }
  throw invalid(
    'not_an_issue_url',
    `${raw.slice(0, 200)} is not the address of an issue on ${[...hosts.github, ...hosts.gitlab].join(' or ')} (https://${hosts.github[0]}/OWNER/REPO/issues/NUMBER, https://${hosts.gitlab[0]}/GROUP/PROJECT/-/issues/NUMBER)`,
  );
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
