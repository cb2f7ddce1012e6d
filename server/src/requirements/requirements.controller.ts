import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import { PageQueryDto } from '../core/http/pagination';
import { RUNTIME, Runtime } from '../core/runtime';
import { workspaceGitState } from '../core/git/git';
import { ModelCatalogService } from '../models/model-catalog.service';
import { CreateRequirementDto } from './dto/create-requirement.dto';
import { EditedRequirementResponseDto } from './dto/edited-requirement-response.dto';
import { ListRequirementsQueryDto } from './dto/list-requirements-query.dto';
import { AgentSessionPageDto, RequirementPageDto, RequirementResponseDto } from './dto/requirement-response.dto';
import { ForkRequirementDto, UpdateRequirementDto } from './dto/update-requirement.dto';
import { RequirementsService } from './requirements.service';

@ApiTags('requirements')
@Controller('requirements')
export class RequirementsController {
  constructor(
    private readonly models: ModelCatalogService,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

  @Get()
  @ApiOperation({ summary: 'List Requirements, newest first' })
  @ApiOkResponse({ type: RequirementPageDto })
  listRequirements(@Query() query: ListRequirementsQueryDto): Promise<RequirementPageDto> {
    return this.requirements.list(query);
  }

  @Post()
  @ApiOperation({ summary: 'Create a Requirement (todo) with its idle RD session' })
  @ApiCreatedResponse({ type: EditedRequirementResponseDto })
  async createRequirement(
    @Body() body: CreateRequirementDto,
    @Actor() actor: EventActor,
  ): Promise<EditedRequirementResponseDto> {
    const created = await this.withWarnings(
      await this.requirements.create({ ...body, createdBy: 'human' }, actor),
      true,
    );
    // `git init` without a commit looks like a repository but gives no worktree: say that this
    // agent will work in the person's checkout rather than let it happen silently.
    if (created.isolation === 'in_place' && (await workspaceGitState(this.runtime.paths.root)) === 'no_commit') {
      created.warnings.push('no_commit_in_place');
    }
    return created;
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get one Requirement with its session' })
  @ApiOkResponse({ type: RequirementResponseDto })
  @ApiNotFoundResponse()
  getRequirement(@Param('id') id: string): Promise<RequirementResponseDto> {
    return this.requirements.get(id);
  }

  @Patch(':id')
  @ApiOperation({
    summary: 'Edit a Requirement: title, description and provider while todo; model and effort for the next run',
  })
  @ApiOkResponse({ type: EditedRequirementResponseDto })
  @ApiBadRequestResponse({ description: 'An invalid field, or no field at all' })
  @ApiNotFoundResponse()
  @ApiConflictResponse({
    description: 'Title, description or provider after the start, or the Requirement is cancelled',
  })
  async updateRequirement(
    @Param('id') id: string,
    @Body() body: UpdateRequirementDto,
    @Actor() actor: EventActor,
  ): Promise<EditedRequirementResponseDto> {
    const edited = body.model !== undefined || body.provider !== undefined || body.reasoningEffort !== undefined;
    return this.withWarnings(await this.requirements.update(id, body, actor), edited);
  }

  @Post(':id/fork')
  @ApiOperation({
    summary: "Fork a Requirement into a new todo one linked to it (the original's fields unless the body gives others)",
  })
  @ApiCreatedResponse({ type: RequirementResponseDto })
  @ApiNotFoundResponse()
  forkRequirement(
    @Param('id') id: string,
    @Body() body: ForkRequirementDto,
    @Actor() actor: EventActor,
  ): Promise<RequirementResponseDto> {
    return this.requirements.fork(id, body, actor);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Withdraw a Requirement that has not started (todo → cancelled)' })
  @ApiNoContentResponse()
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'The Requirement has started' })
  deleteRequirement(@Param('id') id: string, @Actor() actor: EventActor): Promise<void> {
    return this.requirements.cancel(id, actor);
  }

  @Post(':id/confirm')
  @HttpCode(200)
  @ApiOperation({ summary: 'Accept the work: waiting_confirmation → done' })
  @ApiOkResponse({ type: RequirementResponseDto })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'Not waiting for confirmation' })
  confirmRequirement(@Param('id') id: string, @Actor() actor: EventActor): Promise<RequirementResponseDto> {
    return this.requirements.confirm(id, actor);
  }

  /** Flags a model (or effort) the catalog does not know; only when this request set one. */
  private async withWarnings(
    requirement: RequirementResponseDto,
    modelChanged: boolean,
  ): Promise<EditedRequirementResponseDto> {
    const warnings = modelChanged
      ? await this.models.warningsFor(requirement.provider, requirement.model, requirement.reasoningEffort)
      : [];
    return { ...requirement, warnings };
  }
}

@ApiTags('sessions')
@Controller('sessions')
export class SessionsController {
  constructor(private readonly requirements: RequirementsService) {}

  @Get()
  @ApiOperation({ summary: 'List RD sessions, newest first' })
  @ApiOkResponse({ type: AgentSessionPageDto })
  listSessions(@Query() query: PageQueryDto): Promise<AgentSessionPageDto> {
    return this.requirements.listSessions(query);
  }
}
