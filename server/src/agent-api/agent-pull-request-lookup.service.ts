import { Injectable } from '@nestjs/common';

import { FORGE_SIGNS } from '@libs/contracts';

import { parsePullRequestUrl } from '../agent-tools/pull-request-lookup';
import { UsageError } from '../agent-tools/usage-error';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { conflict, invalid, notFound, unavailable } from '../core/errors/domain-error';
import { ForgeError } from '../forges/forge.errors';
import { FORGE_WORDS, ForgeRegistry } from '../forges/pull-request-forge';
import { gitLabHosts, hostOf } from '../landing/forge-remote';
import type { PullRequestLookupResponseDto } from './dto/pull-request-lookup.dto';

/**
 * `pr register --url` fills a PR's (or a GitLab MR's) fields from its forge: asked here, with the
 * manager's own client, so that no agent needs the person's token in its environment (issue 45 §4).
 */
@Injectable()
export class AgentPullRequestLookup {
  constructor(
    private readonly configuration: ConfigurationService,
    private readonly forges: ForgeRegistry,
  ) {}

  async lookup(url: string): Promise<PullRequestLookupResponseDto> {
    let ref: ReturnType<typeof parsePullRequestUrl>;
    try {
      ref = parsePullRequestUrl(url, 'url');
    } catch (err) {
      throw invalid('invalid_pull_request_url', (err as UsageError).message);
    }
    const name = FORGE_WORDS[ref.forge].name;
    if (ref.forge === 'gitlab' && !gitLabHosts(this.configuration.get('gitlabApiUrl')).includes(hostOf(ref.url))) {
      // The token is gitlabApiUrl's: an MR elsewhere is not looked up there (a same-named project would answer).
      throw invalid(
        'invalid_pull_request_url',
        `${ref.url} is not on the GitLab Agent Manager reaches (${this.configuration.get('gitlabApiUrl')}); pass every field instead`,
      );
    }
    const label = `${ref.repository}${FORGE_SIGNS[ref.forge]}${ref.number}`;
    const forge = this.forges.get(ref.forge);
    if (!forge?.configured) {
      // The manager's state, not a failure: 409, and the caller gives every field instead.
      throw conflict(
        `${ref.forge}_not_configured`,
        `Agent Manager has no ${name} token to look the ${FORGE_WORDS[ref.forge].request} up with; pass every field instead`,
      );
    }
    try {
      const pr = await forge.lookUpPullRequest(ref.repository, ref.number);
      return {
        baseBranch: pr.baseBranch,
        forge: ref.forge,
        headBranch: pr.headBranch,
        headSha: pr.headSha,
        number: pr.number,
        repository: pr.repository,
        status: pr.status,
        title: pr.title,
        url: pr.url,
      };
    } catch (err) {
      if (err instanceof ForgeError && err.code === 'not_configured') {
        throw conflict(`${ref.forge}_not_configured`, `Agent Manager has no ${name} token; pass every field instead`);
      }
      if (err instanceof ForgeError && (err.code === 'not_found' || err.code === 'forbidden')) {
        throw notFound('pull_request_not_found', `${name} has no ${label} this token can read`);
      }
      throw unavailable(`${ref.forge}_unavailable`, `${name} lookup of ${label} failed: ${(err as Error).message}`);
    }
  }
}
