import 'reflect-metadata';

import { AgentManagerCliModule } from './agent-manager.module';
import { runCli } from './run-cli';
import { concealCommandLine } from './secret-arguments';

// Before anything else runs (and for every command: `start --db`, `db copy --to`).
concealCommandLine();
void runCli('agent-manager', AgentManagerCliModule);
