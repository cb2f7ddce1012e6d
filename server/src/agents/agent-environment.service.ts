import * as fs from 'node:fs';
import * as path from 'node:path';

import { Inject, Injectable, OnModuleInit } from '@nestjs/common';

import type { Provider } from '@libs/contracts';

import { AGENT_TOOL_SERVER_NAME, AgentToolServer } from './agent-adapter';
import { agentVariables } from './agent-variables';
import { packageRoot } from '../core/package-info';
import { scrubbedEnvironment } from '../core/scrubbed-environment';
import { RUNTIME, Runtime } from '../core/runtime';

export interface AgentContext {
  apiUrl: string;
  provider: Provider;
  requirementId: string;
  sessionId: string;
  token: string;
}

/**
 * What an agent process gets around it: a private `code-factory-cli` launcher first on PATH
 * and its context (API URL, Requirement, session, run credential) in the environment.
 */
@Injectable()
export class AgentEnvironmentService implements OnModuleInit {
  private apiUrlValue = '';

  constructor(@Inject(RUNTIME) private readonly runtime: Runtime) {}

  /**
   * The directory holding the launcher (put first on the agent's PATH). Not in the data
   * directory: agents run in a sandbox that hides it, and they must still reach the launcher.
   */
  get binDirectory(): string {
    return this.runtime.paths.launcherDirectory;
  }

  /** The launcher's absolute path (`$CODE_FACTORY_CLI`, the fallback the instructions name). */
  get cliPath(): string {
    return path.join(this.binDirectory, 'code-factory-cli');
  }

  /** Writes the launcher: a shell script running this installation's CLI with this Node. */
  onModuleInit(): void {
    fs.mkdirSync(this.binDirectory, { mode: 0o700, recursive: true });
    // Where earlier versions wrote it: inside the hidden tree, so no agent may be sent there.
    fs.rmSync(path.join(this.runtime.paths.dataDirectory, 'bin'), { force: true, recursive: true });
    const entry = path.join(packageRoot(), 'bin', 'code-factory-cli.js');
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const script = `#!/bin/sh\n# Written by Agent Manager at start: runs its code-factory-cli.\nexec ${quote(process.execPath)} ${quote(entry)} "$@"\n`;
    const tmp = `${this.cliPath}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, script, { mode: 0o755 });
    fs.renameSync(tmp, this.cliPath);
  }

  /**
   * The run's MCP tools, served by the manager itself (`/api/agent/mcp`, Streamable HTTP): the CLI
   * connects with the run credential it reads from `CODE_FACTORY_TOKEN`, so no MCP server process
   * is started per run and the token never appears on a command line.
   */
  toolServer(): AgentToolServer {
    return { name: AGENT_TOOL_SERVER_NAME, tokenVariable: 'CODE_FACTORY_TOKEN', url: `${this.apiUrl}/agent/mcp` };
  }

  /** What agents inherit from: the manager's environment. */
  private get managerEnv(): NodeJS.ProcessEnv {
    return this.runtime.env ?? process.env;
  }

  /** The manager's API base as agents reach it (`http://127.0.0.1:<port>/api`). */
  get apiUrl(): string {
    return this.apiUrlValue;
  }

  /** Set once the server listens (the URL includes the actual port). */
  setApiUrl(url: string): void {
    this.apiUrlValue = url;
  }

  environment(context: Omit<AgentContext, 'apiUrl'>): Record<string, string> {
    const env = this.baseEnvironment(context.provider);
    env.PATH = [this.binDirectory, this.managerEnv.PATH ?? '/usr/local/bin:/usr/bin:/bin'].join(path.delimiter);
    env.CODE_FACTORY_API_URL = this.apiUrlValue;
    env.CODE_FACTORY_CLI = this.cliPath;
    env.CODE_FACTORY_REQUIREMENT_ID = context.requirementId;
    env.CODE_FACTORY_SESSION_ID = context.sessionId;
    env.CODE_FACTORY_TOKEN = context.token;
    return env;
  }

  /**
   * What every agent process of `provider` (null: a setup or teardown command) starts from: the
   * allowed part of the manager's environment (agent-variables.ts) and `agentEnvironmentPass`.
   */
  baseEnvironment(provider: Provider | null): Record<string, string> {
    const configuration = this.runtime.configuration;
    const secrets = configuration.get('secrets').map((secret) => secret.name);
    return agentVariables(this.managerEnv, configuration.get('agentEnvironmentPass'), provider, secrets);
  }

  /**
   * A reviewer's: no manager access, but the person's GitHub token, since publishing its review
   * on the pull request is its job (docs/security.md, "What an agent's environment holds").
   */
  reviewerEnvironment(provider: Provider): Record<string, string> {
    const secrets = this.runtime.configuration.get('secrets').map((secret) => secret.name);
    return {
      ...this.baseEnvironment(provider),
      ...agentVariables(this.managerEnv, ['GITHUB_TOKEN', 'GH_TOKEN'], provider, secrets),
    };
  }
}

/** What the model catalog's listing runs a CLI with (the manager's own use, outside any sandbox). */
export const catalogEnvironment = scrubbedEnvironment;
