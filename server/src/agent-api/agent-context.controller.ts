import { Controller, Get } from '@nestjs/common';
import { ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';

import { CurrentAgentScope } from '../auth/agent-scope.decorator';
import type { AgentScope } from '../auth/run-credentials.service';

export class AgentContextResponseDto implements AgentScope {
  @ApiProperty() runId!: string;
  @ApiProperty() requirementId!: string;
  @ApiProperty() sessionId!: string;
}

@ApiTags('agent')
@Controller('agent')
export class AgentContextController {
  /** Lets `code-factory-cli` (and a curious agent) check which run, Requirement and session its credential acts for. */
  @Get('context')
  @ApiOperation({ summary: 'The run, Requirement and session the calling run credential is bound to' })
  @ApiOkResponse({ type: AgentContextResponseDto })
  @ApiForbiddenResponse({ description: 'Not called with a run credential' })
  getAgentContext(@CurrentAgentScope() scope: AgentScope): AgentContextResponseDto {
    return { requirementId: scope.requirementId, runId: scope.runId, sessionId: scope.sessionId };
  }
}
