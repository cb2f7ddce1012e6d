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

import { AgentCaller, CurrentAgentCaller } from '../auth/agent-scope.decorator';
import { Actor } from '../core/http/actor.decorator';
import { ModelCatalogService } from '../models/model-catalog.service';
import { EditedRequirementResponseDto } from '../requirements/dto/edited-requirement-response.dto';
import { AgentRequirementsService } from './agent-requirements.service';
import {
  AgentRequirementActionDto,
  AgentRequirementActionResponseDto,
  ProposeRequirementDto,
  RelatedMessageDto,
  RelatedMessageResponseDto,
  RelatedQueryDto,
  RelatedRequirementsDto,
} from './dto/agent-requirements.dto';

const OUTSIDE_SCOPE = "The source Requirement or session is not the run credential's own (the owner's token may name any)";

@ApiTags('agent')
@Controller('agent/requirements')
export class AgentRequirementsController {
  constructor(
    private readonly agentRequirements: AgentRequirementsService,
    private readonly models: ModelCatalogService,
  ) {}

  @Post()
  @ApiOperation({ summary: "Propose a follow-up Requirement, a child of the run's own (todo unless start is true)" })
  @ApiCreatedResponse({ type: EditedRequirementResponseDto })
  @ApiBadRequestResponse({ description: "Invalid fields, or a parent other than the run's Requirement" })
  @ApiForbiddenResponse({ description: OUTSIDE_SCOPE })
  @ApiConflictResponse({ description: "budget_reached: the parent's tree (or an ancestor's) has spent its budget; or the start is refused in its state" })
  async proposeRequirement(@Body() body: ProposeRequirementDto, @CurrentAgentCaller() caller: AgentCaller, @Actor() actor: EventActor): Promise<EditedRequirementResponseDto> {
    const { requirement, warnings } = await this.agentRequirements.propose(body, caller, actor);
    // As for a person's create: a model the catalog does not know is accepted, and the agent is told.
    return { ...requirement, warnings: [...(await this.models.warningsFor(requirement.provider, requirement.model, requirement.reasoningEffort)), ...warnings] };
  }

  @Post(':id/action')
  @ApiOperation({ summary: 'Start, stop, delete or mark done a Requirement the calling session proposed (start/stop answer 202, delete/done 200)' })
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
  @ApiOperation({ summary: "The direct parent and children of the run's Requirement (terminal ones too, until purged)" })
  @ApiOkResponse({ type: RelatedRequirementsDto })
  @ApiBadRequestResponse()
  @ApiForbiddenResponse({ description: OUTSIDE_SCOPE })
  @ApiNotFoundResponse()
  relatedRequirements(@Param('id') id: string, @Query() query: RelatedQueryDto, @CurrentAgentCaller() caller: AgentCaller): Promise<RelatedRequirementsDto> {
    return this.agentRequirements.related(id, query.sourceSessionId, caller);
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
