import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiForbiddenResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { AgentCaller, CurrentAgentCaller } from '../auth/agent-scope.decorator';
import { Actor } from '../core/http/actor.decorator';
import { PullRequestResponseDto, RegisterPullRequestDto } from '../pull-requests/dto/pull-request.dto';
import { PullRequestsService } from '../pull-requests/pull-requests.service';

@ApiTags('agent')
@Controller('agent/pull-requests')
export class AgentPullRequestsController {
  constructor(private readonly pullRequests: PullRequestsService) {}

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
