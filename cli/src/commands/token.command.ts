import * as fs from 'node:fs';
import * as path from 'node:path';

import { Command, CommandRunner, Option } from 'nest-commander';

import { loginUrl, readToken } from '@server/auth/local-token';
import { codeFactoryHome, locateWorkspace } from '@server/core/workspace/workspace';

import { UsageError } from '../options';

interface TokenFlags {
  workspace?: string;
  config?: string;
}

/** The running instance's URL from its lock file, if one runs. */
function runningUrl(lockPath: string): string | null {
  try {
    const lock = JSON.parse(fs.readFileSync(lockPath, 'utf8')) as { url?: string | null };
    return lock.url ?? null;
  } catch {
    return null;
  }
}

@Command({
  description: 'Print the local access token of a workspace and its dashboard login URL',
  name: 'token',
})
export class TokenCommand extends CommandRunner {
  async run(_params: string[], flags: TokenFlags): Promise<void> {
    let paths;
    try {
      paths = locateWorkspace(flags.workspace ?? process.cwd(), codeFactoryHome());
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    // Only read: the token is the first start's to create (asking must not leave a data
    // directory behind for a workspace that never ran).
    const token = readToken(paths.tokenPath);
    if (token === null) {
      throw new UsageError(
        `no token yet for ${paths.root}: Agent Manager has not started for this workspace; start it first (\`agent-manager start\`)`,
      );
    }
    let origin = runningUrl(paths.lockPath);
    if (!origin) {
      // The configuration's schema (class-validator), loaded only when no manager runs to ask.
      const { CONFIGURATION_DEFAULTS } = await import('@server/core/configuration/configuration.schema');
      const { overridesFromEnv, readConfigurationFile } =
        await import('@server/core/configuration/configuration.service');
      let file;
      try {
        file = readConfigurationFile(flags.config ? path.resolve(flags.config) : paths.defaultConfigPath);
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      const configuration = { ...CONFIGURATION_DEFAULTS, ...file, ...overridesFromEnv(process.env) };
      const host = configuration.host;
      origin = `http://${host.includes(':') ? `[${host}]` : host}:${configuration.port}`;
    }
    process.stdout.write(`${token}\n`);
    process.stdout.write(`Login URL: ${loginUrl(origin, token)}\n`);
  }

  @Option({
    description: 'Repository whose token to print (default: the current directory)',
    flags: '-w, --workspace <dir>',
  })
  parseWorkspace(value: string): string {
    return value;
  }

  @Option({ description: 'Configuration file, if the manager is started with --config', flags: '--config <path>' })
  parseConfig(value: string): string {
    return value;
  }
}
