import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { AgentCaller, CurrentAgentCaller } from '../auth/agent-scope.decorator';
import { Actor } from '../core/http/actor.decorator';
import { PullRequestResponseDto, RegisterPullRequestDto } from '../pull-requests/dto/pull-request.dto';
import { AgentPullRequestLookup } from './agent-pull-request-lookup.service';
import { LookupPullRequestDto, PullRequestLookupResponseDto } from './dto/pull-request-lookup.dto';
import { PullRequestsService } from '../pull-requests/pull-requests.service';

@ApiTags('agent')
@Controller('agent/pull-requests')
export class AgentPullRequestsController {
  constructor(
    private readonly lookups: AgentPullRequestLookup,
    private readonly pullRequests: PullRequestsService,
  ) {}

  @Post('lookup')
  @HttpCode(200)
  @ApiOperation({
    summary:
      "What GitHub says of a PR (repository, number, title, branches, head, status), asked with Agent Manager's own token: what `pr register --url` fills its fields from",
  })
  @ApiOkResponse({ type: PullRequestLookupResponseDto })
  @ApiBadRequestResponse()
  @ApiNotFoundResponse({ description: 'GitHub has no such PR this token can read' })
  @ApiConflictResponse({
    description: 'Agent Manager has no token for the forge (github_not_configured, gitlab_not_configured)',
  })
  @ApiServiceUnavailableResponse({ description: 'The forge failed (github_unavailable, gitlab_unavailable)' })
  lookupPullRequest(@Body() body: LookupPullRequestDto): Promise<PullRequestLookupResponseDto> {
    return this.lookups.lookup(body.url);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary:
      "Register a PR for the run's Requirement (the owner's token: the Requirement named), or refresh its metadata (idempotent by repository + number)",
  })
  @ApiOkResponse({ type: PullRequestResponseDto })
  @ApiBadRequestResponse()
  @ApiForbiddenResponse({ description: "Not this run's Requirement" })
  @ApiConflictResponse({ description: 'The PR belongs to another Requirement' })
  registerPullRequest(
    @Body() body: RegisterPullRequestDto,
    @CurrentAgentCaller() caller: AgentCaller,
    @Actor() actor: EventActor,
  ): Promise<PullRequestResponseDto> {
    return this.pullRequests.register(body, caller, actor);
  }
}
