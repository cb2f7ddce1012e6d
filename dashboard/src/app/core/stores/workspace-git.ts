import { Injectable, inject, signal } from '@angular/core';

import { Api } from '../api';

export type WorkspaceGitState = 'repository' | 'no_commit' | 'not_git';

/**
 * What the workspace is to git (`GET /api/workspace/git`): without a commit, agents work in the
 * person's checkout, which the cards and the create dialog say, offering the first commit.
 * Asked once per page load; the first commit made here updates it.
 */
@Injectable({ providedIn: 'root' })
export class WorkspaceGit {
  private readonly api = inject(Api);
  private readonly stateSig = signal<WorkspaceGitState | null>(null);
  private asked: Promise<void> | null = null;
  readonly state = this.stateSig.asReadonly();

  /** Asks once (quietly: a failure only leaves the badge and the offer out). */
  ensure(): Promise<void> {
    this.asked ??= this.api
      .call(this.api.client.GET('/api/workspace/git'), true)
      .then((answer) => this.stateSig.set(answer.state))
      .catch(() => {
        this.asked = null;
      });
    return this.asked;
  }

  /** An empty first commit (the server refuses staged files and says why; the API service shows it). */
  async makeFirstCommit(): Promise<void> {
    const answer = await this.api.call(this.api.client.POST('/api/workspace/first-commit'));
    this.stateSig.set(answer.state);
  }
}
