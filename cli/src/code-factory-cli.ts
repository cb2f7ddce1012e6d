import 'reflect-metadata';

import { CodeFactoryCliModule } from './code-factory-cli.module';
import { runCli } from './run-cli';

void runCli('code-factory-cli', CodeFactoryCliModule);
