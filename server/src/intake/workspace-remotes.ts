import { Injectable } from '@nestjs/common';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { invalid } from '../core/errors/domain-error';
import { type ForgeRemote, gitHubHosts, gitHubRemotes } from '../landing/forge-remote';
import { WorkspaceGit } from '../worktrees/workspace-git.service';

/**
 * The repositories work may come from (issue 49): the workspace's own GitHub remotes, never
 * another, so an import or a listing reaches only what the agents work on.
 */
@Injectable()
export class WorkspaceRemotes {
  constructor(
    private readonly configuration: ConfigurationService,
    private readonly workspace: WorkspaceGit,
  ) {}

  /** Where a GitHub repository may live: github.com and the configured API's host. */
  hosts(): string[] {
    return gitHubHosts(this.configuration.get('githubApiUrl'));
  }

  /** Every GitHub remote of the workspace (`origin` first); none outside git. */
  async all(): Promise<ForgeRemote[]> {
    const repo = await this.workspace.gitWorkspace();
    return repo === null ? [] : gitHubRemotes(repo.top, this.hosts());
  }

  /**
   * The remote naming `wanted` (owner/repo, case aside; on `host` when given), or the first one
   * (`origin` first) when nothing is wanted; 400 `not_a_workspace_remote` otherwise.
   */
  async find(wanted: { owner: string; repo: string; host: string | null } | null): Promise<ForgeRemote> {
    const remotes = await this.all();
    const remote =
      wanted === null
        ? remotes[0]
        : remotes.find(
            (r) =>
              r.owner.toLowerCase() === wanted.owner.toLowerCase() &&
              r.repo.toLowerCase() === wanted.repo.toLowerCase() &&
              (wanted.host === null || r.host.replace(/:\d+$/, '') === wanted.host),
          );
    if (remote === undefined) {
      const known = remotes.map((r) => `${r.owner}/${r.repo}`).join(', ');
      throw invalid(
        'not_a_workspace_remote',
        wanted === null
          ? `this workspace has no remote on GitHub (${this.hosts().join(', ')}) to take issues from`
          : `${wanted.owner}/${wanted.repo} is not one of this workspace's GitHub remotes (${known === '' ? 'it has none' : known}): issues come only from the repository the agents work on`,
      );
    }
    return remote;
  }
}
