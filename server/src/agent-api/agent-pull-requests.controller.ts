import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConflictResponse, ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { CurrentAgentScope } from '../auth/agent-scope.decorator';
import type { AgentScope } from '../auth/run-credentials.service';
import { Actor } from '../core/http/actor.decorator';
import { PullRequestResponseDto, RegisterPullRequestDto } from '../pull-requests/dto/pull-request.dto';
import { PullRequestsService } from '../pull-requests/pull-requests.service';

@ApiTags('agent')
@Controller('agent/pull-requests')
export class AgentPullRequestsController {
  constructor(private readonly pullRequests: PullRequestsService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Register a PR for the run\'s Requirement, or refresh its metadata (idempotent by repository + number)' })
  @ApiOkResponse({ type: PullRequestResponseDto })
  @ApiBadRequestResponse()
  @ApiForbiddenResponse({ description: 'Not this run\'s Requirement' })
  @ApiConflictResponse({ description: 'The PR belongs to another Requirement' })
  registerPullRequest(
    @Body() body: RegisterPullRequestDto,
    @CurrentAgentScope() scope: AgentScope,
    @Actor() actor: EventActor,
  ): Promise<PullRequestResponseDto> {
    return this.pullRequests.register(body, scope, actor);
  }
}
