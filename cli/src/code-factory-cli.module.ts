import { Module } from '@nestjs/common';

import { AgentMcpCommand } from './commands/factory/mcp.command';
import { PrCommand, PrRegisterCommand } from './commands/factory/pr.command';
import {
  PreviewCommand,
  PreviewOutputCommand,
  PreviewStartCommand,
  PreviewStatusCommand,
} from './commands/factory/preview.command';
import {
  RequirementActionCommand,
  RequirementCommand,
  RequirementLandingCommand,
  RequirementMessageCommand,
  RequirementProposeCommand,
  RequirementRelatedCommand,
} from './commands/factory/requirement.command';
import { ReviewCommand, ReviewCommentsCommand, ReviewReplyCommand } from './commands/factory/review.command';
import {
  TimerCancelCommand,
  TimerCommand,
  TimerRegisterCommand,
  TimerShowCommand,
} from './commands/factory/timer.command';
import { AgentOperations } from '@server/agent-tools/agent-operations';
import { ManagerApi } from '@server/agent-tools/manager-api';

/** The agent's side of the control plane: what RD runs call, with the context the manager injects. */
export const CODE_FACTORY_COMMANDS = [
  AgentMcpCommand,
  PrCommand,
  PrRegisterCommand,
  PreviewCommand,
  PreviewStartCommand,
  PreviewStatusCommand,
  PreviewOutputCommand,
  RequirementCommand,
  RequirementProposeCommand,
  RequirementActionCommand,
  RequirementRelatedCommand,
  RequirementMessageCommand,
  RequirementLandingCommand,
  TimerCommand,
  TimerRegisterCommand,
  TimerShowCommand,
  TimerCancelCommand,
  ReviewCommand,
  ReviewCommentsCommand,
  ReviewReplyCommand,
];

@Module({ providers: [...CODE_FACTORY_COMMANDS, AgentOperations, ManagerApi] })
export class CodeFactoryCliModule {}
