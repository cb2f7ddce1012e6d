import 'reflect-metadata';

import { AgentManagerCliModule } from './agent-manager.module';
import { runCli } from './run-cli';

void runCli('agent-manager', AgentManagerCliModule);
