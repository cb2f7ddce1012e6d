import { Injectable } from '@nestjs/common';

import type { Forge } from '@libs/contracts';

import type { IssueForge } from './forge-issues';
import type {
  PullRequestFetchError,
  PullRequestRef,
  PullRequestResult,
  PullRequestSummary,
  RestPullRequestFields,
} from './forge.types';

/**
 * What the PR reconciler and the agent's `pr register --url` ask of a forge (issue 49 §5). GitHub and
 * GitLab implement it in their own folders and register themselves here, so a third forge is one
 * folder: its client maps its API onto these shapes (a merge request is a pull request here).
 */
export interface PullRequestForge {
  readonly kind: Forge;
  /** False when it has no token: the reconciler then skips its PRs (said once in the log). */
  readonly configured: boolean;
  /** Cheap change detection: a fingerprint per PR (same keys and per-PR errors as fetchPullRequests). */
  fetchPullRequestSummaries(
    refs: readonly PullRequestRef[],
  ): Promise<Map<string, PullRequestSummary | PullRequestFetchError>>;
  /** Whole snapshots: comments, reviews, inline comments, checks, mergeability. Throws only `not_configured`. */
  fetchPullRequests(refs: readonly PullRequestRef[]): Promise<Map<string, PullRequestResult>>;
  /** One PR's fields, for `pr register --url`. Throws ForgeError. */
  lookUpPullRequest(repository: string, number: number): Promise<RestPullRequestFields>;
}

/** How each forge names itself and its requests in the conversation. */
export const FORGE_WORDS: Readonly<Record<Forge, { name: string; request: string }>> = {
  github: { name: 'GitHub', request: 'pull request' },
  gitlab: { name: 'GitLab', request: 'merge request' },
};

/** A forge as the manager reaches it: its pull (merge) requests and its issues. */
export type ForgeClient = PullRequestForge & IssueForge;

/** The forges this manager reaches, by kind: each forge's module registers its client at start. */
@Injectable()
export class ForgeRegistry {
  private readonly forges = new Map<Forge, ForgeClient>();

  register(forge: ForgeClient): void {
    this.forges.set(forge.kind, forge);
  }

  /** Null when that forge's module is not loaded (never in the app; a test module may leave one out). */
  get(kind: Forge): ForgeClient | null {
    return this.forges.get(kind) ?? null;
  }
}
