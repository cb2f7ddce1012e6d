import { Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';

import { CurrentAgentScope } from '../auth/agent-scope.decorator';
import type { AgentScope } from '../auth/run-credentials.service';
import { Actor } from '../core/http/actor.decorator';
import type { EventActor } from '@libs/contracts';
import { forbidden } from '../core/errors/domain-error';
import { PreviewDto, PreviewOutputDto } from './dto/preview.dto';
import { PreviewsService } from './previews.service';

const START_REFUSALS =
  'no_worktree (no working copy now), no_run_script (no runCommand and no .agent-manager/run on the base branch), too_many_previews (maxPreviews run and every one has its agent running), runs_on_other_runner, requirement_closed';
const START_UNAVAILABLE = 'network_isolation_unavailable: the preview cannot have the network its agent has here';

/** A Requirement's preview (issue 48 §2), for the person. */
@ApiTags('previews')
@Controller('requirements/:id/preview')
export class PreviewsController {
  constructor(private readonly previews: PreviewsService) {}

  @Get()
  @ApiOperation({ summary: "The Requirement's preview: its state, URL, ports and last lines" })
  @ApiOkResponse({ type: PreviewDto })
  @ApiNotFoundResponse({ description: 'No such Requirement' })
  getPreview(@Param('id') id: string): Promise<PreviewDto> {
    return this.previews.status(id);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary:
      "Starts (or restarts) the Requirement's run script in its working copy, in its agent's sandbox and network, on its own ports",
  })
  @ApiOkResponse({ type: PreviewDto })
  @ApiNotFoundResponse({ description: 'No such Requirement' })
  @ApiConflictResponse({ description: START_REFUSALS })
  @ApiServiceUnavailableResponse({ description: START_UNAVAILABLE })
  startPreview(@Param('id') id: string, @Actor() actor: EventActor): Promise<PreviewDto> {
    return this.previews.start(id, actor);
  }

  @Delete()
  @ApiOperation({ summary: "Stops the Requirement's preview and every process it started" })
  @ApiOkResponse({ type: PreviewDto })
  @ApiNotFoundResponse({ description: 'No such Requirement' })
  stopPreview(@Param('id') id: string, @Actor() actor: EventActor): Promise<PreviewDto> {
    return this.previews.stop(id, actor);
  }

  @Get('output')
  @ApiOperation({ summary: "The preview's kept output (its last 5,000 lines)" })
  @ApiOkResponse({ type: PreviewOutputDto })
  @ApiNotFoundResponse({ description: 'No such Requirement' })
  getPreviewOutput(@Param('id') id: string): Promise<PreviewOutputDto> {
    return this.previews.output(id);
  }
}

const OUTSIDE_SCOPE =
  "agent_credential_required: not called with a run credential; outside_run_scope: not the run's own Requirement";

function own(id: string, scope: AgentScope): string {
  if (id !== scope.requirementId) {
    throw forbidden('outside_run_scope', `this run acts for Requirement ${scope.requirementId}, not ${id}`);
  }
  return id;
}

/** The same preview for its agent (issue 48 §3): `code-factory-cli preview` and the MCP tools. */
@ApiTags('agent')
@Controller('agent/requirements/:id/preview')
export class AgentPreviewsController {
  constructor(private readonly previews: PreviewsService) {}

  @Get()
  @ApiOperation({ summary: "The run's own Requirement's preview" })
  @ApiOkResponse({ type: PreviewDto })
  @ApiForbiddenResponse({ description: OUTSIDE_SCOPE })
  getAgentPreview(@Param('id') id: string, @CurrentAgentScope() scope: AgentScope): Promise<PreviewDto> {
    return this.previews.status(own(id, scope));
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary:
      "Starts (or restarts) the run's own Requirement's preview; reach it at its url (through the run's proxy: curl and most HTTP clients use it)",
  })
  @ApiOkResponse({ type: PreviewDto })
  @ApiForbiddenResponse({ description: OUTSIDE_SCOPE })
  @ApiConflictResponse({ description: START_REFUSALS })
  @ApiServiceUnavailableResponse({ description: START_UNAVAILABLE })
  startAgentPreview(@Param('id') id: string, @CurrentAgentScope() scope: AgentScope): Promise<PreviewDto> {
    return this.previews.start(own(id, scope), { id: scope.runId, kind: 'agent' });
  }

  @Get('output')
  @ApiOperation({ summary: "The run's own Requirement's preview output (its last 5,000 lines)" })
  @ApiOkResponse({ type: PreviewOutputDto })
  @ApiForbiddenResponse({ description: OUTSIDE_SCOPE })
  getAgentPreviewOutput(@Param('id') id: string, @CurrentAgentScope() scope: AgentScope): Promise<PreviewOutputDto> {
    return this.previews.output(own(id, scope));
  }
}
