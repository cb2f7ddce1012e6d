import { Module } from '@nestjs/common';

/**
 * The agent's side of the control plane. Its commands (pr, requirement, timer) are added with
 * the Agent API; the program exists now so the package's bins are stable.
 */
export const CODE_FACTORY_COMMANDS = [];

@Module({ providers: CODE_FACTORY_COMMANDS })
export class CodeFactoryCliModule {}
