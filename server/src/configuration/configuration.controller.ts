import { Body, Controller, Get, Inject, Patch, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { AgentSandbox } from '../agents/agent-sandbox';
import { UpdateConfigurationDto } from '../core/configuration/configuration.schema';
import { Actor } from '../core/http/actor.decorator';
import { RUNTIME, Runtime } from '../core/runtime';
import { WorkspaceGit } from '../worktrees/workspace-git.service';
import {
  ConfigurationResponseDto,
  HealthResponseDto,
  MetricsQueryDto,
  MetricsResponseDto,
  WorkspaceResponseDto,
} from './dto/configuration-response.dto';
import { MetricsService } from './metrics.service';
import { ManagerConfigurationService } from './manager-configuration.service';

@ApiTags('manager')
@Controller()
export class ConfigurationController {
  constructor(
    private readonly agentSandbox: AgentSandbox,
    private readonly configuration: ManagerConfigurationService,
    private readonly metrics: MetricsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
    private readonly workspace: WorkspaceGit,
  ) {}

  @Get('health')
  @ApiOperation({ summary: 'Liveness; needs no credentials' })
  @ApiOkResponse({ type: HealthResponseDto })
  getHealth(): HealthResponseDto {
    return {
      agentIsolation: this.agentSandbox.status,
      ok: true,
      version: this.runtime.version,
      workspaceRoot: this.runtime.paths.root,
    };
  }

  @Get('metrics')
  @ApiOperation({ summary: 'Process figures: event-loop delay, memory, active runs, SSE clients' })
  @ApiOkResponse({ type: MetricsResponseDto })
  getMetrics(@Query() query: MetricsQueryDto): MetricsResponseDto {
    return this.metrics.snapshot(query.reset === 'true');
  }

  @Get('workspace')
  @ApiOperation({ summary: 'The bound workspace and where its data lives' })
  @ApiOkResponse({ type: WorkspaceResponseDto })
  async getWorkspace(): Promise<WorkspaceResponseDto> {
    const { paths } = this.runtime;
    const usage = await this.workspace.diskUsage();
    return {
      attachmentsDirectory: paths.attachmentsDirectory,
      dataDirectory: paths.dataDirectory,
      databasePath: this.runtime.databasePath,
      logFilePath: this.runtime.logFilePath,
      person: this.runtime.person,
      root: paths.root,
      runnerId: this.runtime.board?.runnerId ?? null,
      worktreeCount: usage.count,
      worktreesDirectory: this.workspace.directory,
      worktreesDiskBytes: usage.bytes,
    };
  }

  @Get('configuration')
  @ApiOperation({ summary: 'The workspace configuration' })
  @ApiOkResponse({ type: ConfigurationResponseDto })
  getConfiguration(): ConfigurationResponseDto {
    return this.configuration.snapshot();
  }

  @Patch('configuration')
  @ApiOperation({ summary: 'Change configuration fields; live fields apply at once, the rest after a restart' })
  @ApiOkResponse({ type: ConfigurationResponseDto })
  @ApiBadRequestResponse({ description: 'Unknown field or invalid value' })
  updateConfiguration(
    @Body() body: UpdateConfigurationDto,
    @Actor() actor: EventActor,
  ): Promise<ConfigurationResponseDto> {
    return this.configuration.update(body, actor);
  }
}
