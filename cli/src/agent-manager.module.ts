import { Module } from '@nestjs/common';

import { DbCommand, DbCopyCommand } from './commands/db.command';
import { DoctorCommand } from './commands/doctor.command';
import { OwnerMcpCommand } from './commands/mcp.command';
import { StartCommand } from './commands/start.command';
import { TokenCommand } from './commands/token.command';

/** Every agent-manager command, registered in one place. */
export const AGENT_MANAGER_COMMANDS = [OwnerMcpCommand, StartCommand, TokenCommand, DoctorCommand, DbCommand, DbCopyCommand];

@Module({ providers: AGENT_MANAGER_COMMANDS })
export class AgentManagerCliModule {}
