import type { Type } from '@nestjs/common';
import { CommandFactory } from 'nest-commander';

import { packageVersion } from '@server/core/package-info';

import { UsageError } from './options';

/**
 * Runs a nest-commander program: errors become one line on stderr and exit code 1, never a
 * stack trace (unless it is a bug, when the stack helps the report).
 */
export async function runCli(name: string, module: Type<unknown>): Promise<void> {
  const fail = (err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`${name}: ${message}\n`);
    if (!(err instanceof UsageError) && err instanceof Error && process.env.DEBUG) {
      process.stderr.write(`${err.stack}\n`);
    }
    process.exitCode = 1;
  };
  try {
    await CommandFactory.run(module, {
      errorHandler: (err) => {
        // commander's own exits (--help, --version) arrive here as errors with exit codes.
        const exitCode = (err as { exitCode?: number }).exitCode;
        if (exitCode !== undefined) {
          process.exit(exitCode);
        }
        fail(err);
      },
      logger: false,
      serviceErrorHandler: fail,
      // `--version` answers from the package alone: no manager, no workspace needed.
      version: packageVersion(),
    });
  } catch (err) {
    fail(err);
  }
}
