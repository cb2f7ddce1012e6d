import { Injectable } from '@nestjs/common';

import { AgentRequirementAction, DependencyCondition, LIMITS, Provider, ReasoningEffort } from '@libs/contracts';

import { UsageError } from './usage-error';
import { ManagerApi, ManagerApiError } from './manager-api';
import { PullRequestFields, parsePullRequestUrl } from './pull-request-lookup';

export interface ProposeInput {
  title: string;
  description: string;
  provider?: Provider;
  model?: string;
  reasoningEffort?: ReasoningEffort;
  start?: boolean;
  /** Requirements the new one waits for (issue 18 §2). */
  dependsOn?: Array<{ requirementId: string; until: DependencyCondition }>;
  autoStart?: boolean;
  /** A cross-model review loop on its PRs (issue 18 §3); both fields have server defaults. */
  autoReview?: { provider?: Provider; maxRounds?: number };
  /**
   * What its RD runs may spend (issue 18 §1); the server lowers it to what the current
   * Requirement's tree has left (issue 25 §4). Absent: that room, or the workspace's default budget.
   */
  budget?: { maxTokens?: number; maxCostUsd?: number };
}

export interface RegisterPullRequestInput extends Partial<PullRequestFields> {
  url?: string;
}

export interface TimerInput {
  description: string;
  afterSeconds: number;
  repeat?: boolean;
}

/** How often `preview start --wait` asks whether the preview is ready. */
const PREVIEW_POLL_MS = 300;
/** The longest `preview start` waits for readiness. */
export const PREVIEW_WAIT_MAX_SECONDS = 300;

// In the order a person reads them in an error; `flag` for the CLI, the field name for the MCP tool.
const PULL_REQUEST_FIELDS: Array<[keyof PullRequestFields, string]> = [
  ['repository', '--repository'],
  ['number', '--number'],
  ['url', '--url'],
  ['title', '--title'],
  ['baseBranch', '--base-branch'],
  ['headBranch', '--head-branch'],
  ['headSha', '--head-sha'],
  ['status', '--status'],
];

/**
 * What an agent run can ask of Agent Manager, each one HTTP call to the agent API with the run's
 * own context and credential. The `code-factory-cli` commands and the MCP tools of
 * `code-factory-cli mcp` both go through here, so they do exactly the same thing.
 */
@Injectable()
export class AgentOperations {
  constructor(private readonly api: ManagerApi) {}

  /** Fails now if the run's environment is missing or malformed (the one-line error names what). */
  checkContext(): void {
    void this.api.context;
  }

  /** With `url` and a token for its forge the other fields come from the forge; fields given explicitly win. */
  async registerPullRequest(input: RegisterPullRequestInput, names: 'flags' | 'fields' = 'fields'): Promise<unknown> {
    const { context } = this.api;
    let fields: Partial<PullRequestFields> = {};
    let lookupSkipped = false;
    let forgeName = input.forge === 'gitlab' ? 'GitLab' : 'GitHub';
    if (input.url) {
      const parsed = parsePullRequestUrl(input.url, names === 'flags' ? '--url' : 'url');
      if (input.forge !== undefined && input.forge !== parsed.forge) {
        throw new UsageError(`${input.url} is a ${parsed.forge} address, not ${input.forge}'s`);
      }
      forgeName = parsed.forge === 'gitlab' ? 'GitLab' : 'GitHub';
      const found = await this.lookUp(parsed, forgeName);
      lookupSkipped = found === null;
      fields = { ...parsed, ...found };
    }
    const defined = Object.fromEntries(
      Object.entries(input).filter(([, value]) => value !== undefined),
    ) as Partial<PullRequestFields>;
    fields = { ...fields, ...defined };
    const missing = PULL_REQUEST_FIELDS.filter(([key]) => fields[key] === undefined).map(([key, flag]) =>
      names === 'flags' ? flag : key,
    );
    if (missing.length > 0) {
      const url = names === 'flags' ? '--url' : 'url';
      const hint = input.url
        ? ` (${forgeName} was not asked: Agent Manager has no ${forgeName} token)`
        : ` (or pass ${url}: Agent Manager asks ${forgeName} for the rest)`;
      throw new UsageError(`missing ${missing.join(', ')}${lookupSkipped || !input.url ? hint : ''}`);
    }
    const complete = fields as PullRequestFields;
    return this.api.call('pr register', (client, signal) =>
      client.POST('/api/agent/pull-requests', { body: { ...complete, requirementId: context.requirementId }, signal }),
    );
  }

  /**
   * The PR's fields as its forge has them, asked by Agent Manager with its own token (the agent
   * holds none); null when it has no token (the caller then needs every field).
   */
  private async lookUp(
    ref: Pick<PullRequestFields, 'repository' | 'number' | 'url'>,
    forgeName: string,
  ): Promise<Partial<PullRequestFields> | null> {
    try {
      return await this.api.call('pr lookup', (client, signal) =>
        client.POST('/api/agent/pull-requests/lookup', { body: { url: ref.url }, signal }),
      );
    } catch (err) {
      if (err instanceof ManagerApiError && /^(github|gitlab)_not_configured$/.test(err.answer?.code ?? '')) {
        return null;
      }
      const label = `${ref.repository}${forgeName === 'GitLab' ? '!' : '#'}${ref.number}`;
      throw new UsageError(`${forgeName} lookup of ${label} failed: ${(err as Error).message}`);
    }
  }

  async propose(input: ProposeInput): Promise<unknown> {
    const { context } = this.api;
    return this.api.call('propose', (client, signal) =>
      client.POST('/api/agent/requirements', {
        body: {
          ...(input.dependsOn && { dependsOn: input.dependsOn }),
          ...(input.autoStart && { autoStart: true }),
          ...(input.autoReview && { autoReview: input.autoReview }),
          ...(input.budget && { budget: input.budget }),
          description: input.description,
          model: input.model,
          parentRequirementId: context.requirementId,
          provider: input.provider,
          reasoningEffort: input.reasoningEffort,
          sourceSessionId: context.sessionId,
          start: input.start === true,
          title: input.title,
        },
        signal,
      }),
    );
  }

  async act(requirementId: string, action: AgentRequirementAction): Promise<unknown> {
    const { context } = this.api;
    return this.api.call(action, (client, signal) =>
      client.POST('/api/agent/requirements/{id}/action', {
        body: { action, sourceRequirementId: context.requirementId, sourceSessionId: context.sessionId },
        params: { path: { id: requirementId } },
        signal,
      }),
    );
  }

  async related(): Promise<unknown> {
    const { context } = this.api;
    return this.api.call('related', (client, signal) =>
      client.GET('/api/agent/requirements/{id}/related', {
        params: { path: { id: context.requirementId }, query: { sourceSessionId: context.sessionId } },
        signal,
      }),
    );
  }

  /** The conflict radar for the run's own Requirement: merges cleanly, conflicts, how far behind, and what to do. */
  async landing(): Promise<unknown> {
    const { context } = this.api;
    return this.api.call('landing', (client, signal) =>
      client.GET('/api/agent/requirements/{id}/landing', { params: { path: { id: context.requirementId } }, signal }),
    );
  }

  async message(requirementId: string, message: string): Promise<unknown> {
    const { context } = this.api;
    return this.api.call('message', (client, signal) =>
      client.POST('/api/agent/requirements/{id}/related/{targetId}/messages', {
        body: { message, sourceSessionId: context.sessionId },
        params: { path: { id: context.requirementId, targetId: requirementId } },
        signal,
      }),
    );
  }

  async registerTimer(input: TimerInput): Promise<unknown> {
    const { context } = this.api;
    return this.api.call('timer register', (client, signal) =>
      client.POST('/api/requirements/{id}/timers', {
        body: {
          description: input.description,
          intervalSeconds: input.afterSeconds,
          schedule: input.repeat ? 'recurring' : 'once',
        },
        params: { path: { id: context.requirementId } },
        signal,
      }),
    );
  }

  async listTimers(): Promise<unknown> {
    const { context } = this.api;
    return this.api.call('timer show', (client, signal) =>
      client.GET('/api/requirements/{id}/timers', {
        params: { path: { id: context.requirementId }, query: { limit: LIMITS.pageSizeMax } },
        signal,
      }),
    );
  }

  async cancelTimer(timerId: string): Promise<unknown> {
    const { context } = this.api;
    return this.api.call('timer cancel', (client, signal) =>
      client.DELETE('/api/requirements/{id}/timers/{timerId}', {
        params: { path: { id: context.requirementId, timerId } },
        signal,
      }),
    );
  }

  /** The review threads a person sent to the run's Requirement (path, lines, quote, comment, replies, state). */
  /**
   * Starts (or restarts) the current Requirement's preview; with `wait`, answers once it is ready
   * or has exited (at most `wait` seconds), so a test can go on against its url at once.
   */
  async startPreview(wait = 0): Promise<unknown> {
    const { context } = this.api;
    const started = await this.api.call('preview start', (client, signal) =>
      client.POST('/api/agent/requirements/{id}/preview', { params: { path: { id: context.requirementId } }, signal }),
    );
    const deadline = Date.now() + wait * 1000;
    let preview = started as { state: string };
    while (preview.state === 'starting' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, PREVIEW_POLL_MS));
      preview = (await this.previewStatus()) as { state: string };
    }
    return preview;
  }

  async previewStatus(): Promise<unknown> {
    const { context } = this.api;
    return this.api.call('preview status', (client, signal) =>
      client.GET('/api/agent/requirements/{id}/preview', { params: { path: { id: context.requirementId } }, signal }),
    );
  }

  /** The preview's kept output; `lines` keeps only the last that many. */
  async previewOutput(lines?: number): Promise<unknown> {
    const { context } = this.api;
    const output = (await this.api.call('preview output', (client, signal) =>
      client.GET('/api/agent/requirements/{id}/preview/output', {
        params: { path: { id: context.requirementId } },
        signal,
      }),
    )) as { lines: string[]; dropped: number };
    if (lines === undefined || output.lines.length <= lines) {
      return output;
    }
    return { ...output, dropped: output.dropped + output.lines.length - lines, lines: output.lines.slice(-lines) };
  }

  async reviewComments(): Promise<unknown> {
    const { context } = this.api;
    return this.api.call('review comments', (client, signal) =>
      client.GET('/api/agent/requirements/{id}/review-comments', {
        params: { path: { id: context.requirementId } },
        signal,
      }),
    );
  }

  /** The agent's answer in a review thread, resolving it with `resolve`. */
  async replyToReviewComment(commentId: string, body: string, resolve?: boolean): Promise<unknown> {
    const { context } = this.api;
    return this.api.call('review reply', (client, signal) =>
      client.POST('/api/agent/requirements/{id}/review-comments/{commentId}/replies', {
        body: { body, ...(resolve === true && { resolve: true }) },
        params: { path: { commentId, id: context.requirementId } },
        signal,
      }),
    );
  }
}
