import { Module } from '@nestjs/common';

import { DoctorCommand } from './commands/doctor.command';
import { OwnerMcpCommand } from './commands/mcp.command';
import { StartCommand } from './commands/start.command';
import { TokenCommand } from './commands/token.command';

/** Every agent-manager command, registered in one place. */
export const AGENT_MANAGER_COMMANDS = [OwnerMcpCommand, StartCommand, TokenCommand, DoctorCommand];

@Module({ providers: AGENT_MANAGER_COMMANDS })
export class AgentManagerCliModule {}
