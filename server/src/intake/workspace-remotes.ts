import { Injectable } from '@nestjs/common';

import type { Forge } from '@libs/contracts';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { invalid } from '../core/errors/domain-error';
import {
  type ForgeHosts,
  type ForgeRemote,
  forgeRemotes,
  gitHubHosts,
  gitLabHosts,
  remotePath,
} from '../landing/forge-remote';
import { WorkspaceGit } from '../worktrees/workspace-git.service';

/**
 * The repositories work may come from (issue 49): the workspace's own GitHub and GitLab remotes,
 * never another, so an import or a listing reaches only what the agents work on.
 */
@Injectable()
export class WorkspaceRemotes {
  constructor(
    private readonly configuration: ConfigurationService,
    private readonly workspace: WorkspaceGit,
  ) {}

  /** Where each forge's repositories may live: github.com, gitlab.com and the configured APIs' hosts. */
  hosts(): Required<ForgeHosts> {
    return {
      github: gitHubHosts(this.configuration.get('githubApiUrl')),
      gitlab: gitLabHosts(this.configuration.get('gitlabApiUrl')),
    };
  }

  /** Every GitHub or GitLab remote of the workspace (`origin` first); none outside git. */
  async all(): Promise<ForgeRemote[]> {
    const repo = await this.workspace.gitWorkspace();
    return repo === null ? [] : forgeRemotes(repo.top, this.hosts());
  }

  /**
   * The remote naming `wanted` (its repository path, case aside; on `forge` and `host` when
   * given), or the first one (`origin` first) when nothing is wanted; 400 `not_a_workspace_remote`
   * otherwise, and 400 `ambiguous_repository` when the path is on both forges and none was named
   * (a GitLab mirror of a GitHub repository: an issue number means a different issue on each).
   */
  async find(wanted: { repository: string; host: string | null; forge?: Forge } | null): Promise<ForgeRemote> {
    const remotes = await this.all();
    const matching =
      wanted === null
        ? remotes.slice(0, 1)
        : remotes.filter(
            (r) =>
              remotePath(r).toLowerCase() === wanted.repository.toLowerCase() &&
              (wanted.forge === undefined || r.forge === wanted.forge) &&
              (wanted.host === null || r.host.replace(/:\d+$/, '') === wanted.host),
          );
    if (new Set(matching.map((r) => r.forge)).size > 1) {
      throw invalid(
        'ambiguous_repository',
        `${wanted?.repository ?? ''} is a remote on both GitHub and GitLab: say which with forge ("github" or "gitlab")`,
      );
    }
    const remote = matching[0];
    if (remote === undefined) {
      const known = remotes.map(remotePath).join(', ');
      const hosts = Object.values(this.hosts()).flat();
      throw invalid(
        'not_a_workspace_remote',
        wanted === null
          ? `this workspace has no remote on GitHub or GitLab (${hosts.join(', ')}) to take issues from`
          : `${wanted.repository} is not one of this workspace's GitHub or GitLab remotes (${known === '' ? 'it has none' : known}): issues come only from the repository the agents work on`,
      );
    }
    return remote;
  }
}
