import { Module } from '@nestjs/common';

import { DbCommand, DbCopyCommand } from './commands/db.command';
import { DoctorCommand } from './commands/doctor.command';
import { LogsCommand } from './commands/logs.command';
import { OwnerMcpCommand } from './commands/mcp.command';
import { PairCommand } from './commands/pair.command';
import { RestartCommand } from './commands/restart.command';
import { StartCommand } from './commands/start.command';
import { StatusCommand } from './commands/status.command';
import { StopCommand } from './commands/stop.command';
import { TokenCommand } from './commands/token.command';

/** Every agent-manager command, registered in one place. */
export const AGENT_MANAGER_COMMANDS = [
  OwnerMcpCommand,
  StartCommand,
  TokenCommand,
  PairCommand,
  DoctorCommand,
  DbCommand,
  DbCopyCommand,
  StatusCommand,
  StopCommand,
  RestartCommand,
  LogsCommand,
];

@Module({ providers: AGENT_MANAGER_COMMANDS })
export class AgentManagerCliModule {}
