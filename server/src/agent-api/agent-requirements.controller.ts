import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import type { Response } from 'express';

import type { EventActor } from '@libs/contracts';

import { AgentCaller, CurrentAgentCaller, CurrentAgentScope } from '../auth/agent-scope.decorator';
import type { AgentScope } from '../auth/run-credentials.service';
import { Actor } from '../core/http/actor.decorator';
import { ModelCatalogService } from '../models/model-catalog.service';
import { EditedRequirementResponseDto } from '../requirements/dto/edited-requirement-response.dto';
import { AgentLandingService } from './agent-landing.service';
import { AgentRequirementsService } from './agent-requirements.service';
import {
  AgentLandingResponseDto,
  AgentRequirementActionDto,
  AgentRequirementActionResponseDto,
  ProposeRequirementDto,
  RelatedMessageDto,
  RelatedMessageResponseDto,
  RelatedQueryDto,
  RelatedRequirementsDto,
} from './dto/agent-requirements.dto';

const OUTSIDE_SCOPE =
  "The source Requirement or session is not the run credential's own (the owner's token may name any)";

@ApiTags('agent')
@Controller('agent/requirements')
export class AgentRequirementsController {
  constructor(
    private readonly agentRequirements: AgentRequirementsService,
    private readonly landing: AgentLandingService,
    private readonly models: ModelCatalogService,
  ) {}

  @Post()
  @ApiOperation({ summary: "Propose a follow-up Requirement, a child of the run's own (todo unless start is true)" })
  @ApiCreatedResponse({ type: EditedRequirementResponseDto })
  @ApiBadRequestResponse({ description: "Invalid fields, or a parent other than the run's Requirement" })
  @ApiForbiddenResponse({ description: OUTSIDE_SCOPE })
  @ApiConflictResponse({
    description:
      "budget_reached: the parent's tree (or an ancestor's) has spent its budget; or the start is refused in its state",
  })
  async proposeRequirement(
    @Body() body: ProposeRequirementDto,
    @CurrentAgentCaller() caller: AgentCaller,
    @Actor() actor: EventActor,
  ): Promise<EditedRequirementResponseDto> {
    const { requirement, warnings } = await this.agentRequirements.propose(body, caller, actor);
    // As for a person's create: a model the catalog does not know is accepted, and the agent is told.
    return {
      ...requirement,
      warnings: [
        ...(await this.models.warningsFor(requirement.provider, requirement.model, requirement.reasoningEffort)),
        ...warnings,
      ],
    };
  }

  @Post(':id/action')
  @ApiOperation({
    summary:
      'Start, stop, delete or mark done a Requirement the calling session proposed (start/stop answer 202, delete/done 200)',
  })
  @ApiAcceptedResponse({ description: 'start, stop', type: AgentRequirementActionResponseDto })
  @ApiOkResponse({ description: 'delete, done', type: AgentRequirementActionResponseDto })
  @ApiBadRequestResponse()
  @ApiForbiddenResponse({ description: OUTSIDE_SCOPE })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'Not a child proposed by this session, or the action is illegal in its state' })
  async actOnRequirement(
    @Param('id') id: string,
    @Body() body: AgentRequirementActionDto,
    @CurrentAgentCaller() caller: AgentCaller,
    @Actor() actor: EventActor,
    @Res({ passthrough: true }) res: Response,
  ): Promise<AgentRequirementActionResponseDto> {
    const result = await this.agentRequirements.act(id, body, caller, actor);
    res.status(body.action === 'start' || body.action === 'stop' ? 202 : 200);
    return result;
  }

  @Get(':id/related')
  @ApiOperation({
    summary: "The direct parent and children of the run's Requirement (terminal ones too, until purged)",
  })
  @ApiOkResponse({ type: RelatedRequirementsDto })
  @ApiBadRequestResponse()
  @ApiForbiddenResponse({ description: OUTSIDE_SCOPE })
  @ApiNotFoundResponse()
  relatedRequirements(
    @Param('id') id: string,
    @Query() query: RelatedQueryDto,
    @CurrentAgentCaller() caller: AgentCaller,
  ): Promise<RelatedRequirementsDto> {
    return this.agentRequirements.related(id, query.sourceSessionId, caller);
  }

  @Get(':id/landing')
  @ApiOperation({
    summary:
      "The conflict radar for the run's own Requirement: whether its work merges cleanly onto its base, the conflicting files, the other live Requirements it conflicts with, how far behind it is, and what to do",
  })
  @ApiOkResponse({ type: AgentLandingResponseDto })
  @ApiForbiddenResponse({
    description:
      "agent_credential_required: not called with a run credential; outside_run_scope: not the run's own Requirement",
  })
  @ApiNotFoundResponse()
  requirementLanding(
    @Param('id') id: string,
    @CurrentAgentScope() scope: AgentScope,
  ): Promise<AgentLandingResponseDto> {
    return this.landing.landing(id, scope);
  }

  @Post(':id/related/:targetId/messages')
  @HttpCode(202)
  @ApiOperation({ summary: 'Message the direct parent or a direct child: starts its session or waits behind its run' })
  @ApiAcceptedResponse({ type: RelatedMessageResponseDto })
  @ApiBadRequestResponse()
  @ApiForbiddenResponse({ description: OUTSIDE_SCOPE })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'Not the direct parent or a child, or the target is cancelled' })
  messageRelatedRequirement(
    @Param('id') id: string,
    @Param('targetId') targetId: string,
    @Body() body: RelatedMessageDto,
    @CurrentAgentCaller() caller: AgentCaller,
    @Actor() actor: EventActor,
  ): Promise<RelatedMessageResponseDto> {
    return this.agentRequirements.message(id, targetId, body, caller, actor);
  }
}
