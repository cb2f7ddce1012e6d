import { Injectable } from '@nestjs/common';

import type { EventActor } from '@libs/contracts';

import { conflict } from '../core/errors/domain-error';
import type { PullRequestResponseDto } from '../pull-requests/dto/pull-request.dto';
import type { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';

/** Lands a Requirement as a pull request: pushes its branch to the workspace's GitHub remote and opens the PR. */
@Injectable()
export class LandingPullRequests {
  async open(id: string, actor: EventActor): Promise<{ requirement: RequirementResponseDto; pullRequest: PullRequestResponseDto }> {
    void actor;
    throw conflict('github_remote_missing', `Requirement ${id}: opening a pull request is being built`);
  }
}
