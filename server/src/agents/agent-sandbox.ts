import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';

import type { AgentIsolation } from '@libs/contracts';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { RUNTIME, Runtime } from '../core/runtime';
import { findExecutable } from './executable';

/** What one agent process may see of the hidden trees. */
export interface SandboxLayout {
  /** Directories replaced by an empty tmpfs: every workspace's data (tokens, databases, logs…). */
  hidden: string[];
  /** Files inside them bound back read-only: the run's own attachments. */
  readOnlyFiles: string[];
  /** The process's working directory, bound back read-write if it lies inside a hidden one. */
  cwd: string;
}

/**
 * Capabilities that would undo the hiding for an agent running as root: `CAP_SYS_ADMIN` can
 * unmount the tmpfs or enter another mount namespace, `CAP_DAC_READ_SEARCH` can open files by
 * inode handle (`open_by_handle_at`) past any mount. A normal user has neither; for root the
 * rest (reading files of other users, package managers…) stays as it was.
 */
const DROPPED_CAPABILITIES = ['CAP_SYS_ADMIN', 'CAP_DAC_READ_SEARCH'];

const PROBE_TIMEOUT_MS = 10_000;

function inside(file: string, dir: string): boolean {
  const relative = path.relative(dir, file);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * bubblewrap's options for a layout (what goes before `--` and the command). The whole file
 * system stays as it is (`--dev-bind / /`) except the hidden trees. A new PID namespace with
 * its own /proc is part of the hiding: through the host's /proc an agent could walk into any
 * of the user's processes' mount namespaces (`/proc/<pid>/root/…`) or open files (`fd/`).
 * The manager still sees every process of the run (its namespace is the parent one), so the
 * marker-based tree kill works unchanged.
 */
export function bubblewrapOptions(layout: SandboxLayout): string[] {
  const args = ['--dev-bind', '/', '/', '--unshare-pid', '--proc', '/proc'];
  for (const cap of DROPPED_CAPABILITIES) {
    args.push('--cap-drop', cap);
  }
  for (const dir of layout.hidden) {
    args.push('--tmpfs', dir);
  }
  if (layout.hidden.some((dir) => inside(layout.cwd, dir))) {
    args.push('--bind', layout.cwd, layout.cwd);
  }
  for (const file of new Set(layout.readOnlyFiles)) {
    // Outside the hidden trees a file is visible anyway; a missing one would make bwrap fail.
    if (layout.hidden.some((dir) => inside(file, dir)) && fs.existsSync(file)) {
      args.push('--ro-bind', file, file);
    }
  }
  args.push('--chdir', layout.cwd);
  return args;
}

/**
 * Starts agent processes (RD and reviewer, every provider) inside a mount namespace in which
 * the `workspaces/` tree of the Agent Manager home is an empty tmpfs, so that an agent cannot
 * read the owner token (or the database, configuration, logs, other Requirements' attachments)
 * and act as the owner. Probed once at start with the very options runs use; where bubblewrap is
 * missing or refused (no user namespaces) runs go on unisolated and the banner, the log and
 * `GET /api/health` say so.
 */
@Injectable()
export class AgentSandbox implements OnModuleInit {
  private readonly logger = new Logger(AgentSandbox.name);
  private state: AgentIsolation = { enabled: false, mechanism: null, reason: 'not probed yet' };
  private bwrap: string | null = null;
  /** The trees every agent is kept out of. */
  readonly hidden: string[];

  constructor(
    private readonly configuration: ConfigurationService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {
    // This manager's home, and the default one when another is in use: an agent of a test or
    // second installation must not reach the user's everyday manager either.
    // (Only if it exists: bwrap would create the mount point on the real file system.)
    const own = path.join(runtime.paths.home, 'workspaces');
    const usual = path.join(os.homedir(), '.code-factory', 'workspaces');
    this.hidden = usual !== own && fs.existsSync(usual) ? [own, usual] : [own];
  }

  get status(): AgentIsolation {
    return { ...this.state };
  }

  async onModuleInit(): Promise<void> {
    this.state = await this.probe();
    if (this.state.enabled) {
      this.logger.log(`agents run in a bubblewrap sandbox that hides ${this.hidden.join(', ')}`);
    } else {
      this.logger.warn(`agents are not isolated: ${this.state.reason}. An agent can read this workspace's token and act as its owner (see docs/security.md).`);
    }
  }

  /** The command line that runs `command args` in the sandbox (unchanged when there is none). */
  wrap(command: string, args: string[], layout: Omit<SandboxLayout, 'hidden'>): { command: string; args: string[] } {
    if (!this.state.enabled || this.bwrap === null) {
      return { args, command };
    }
    return { args: [...bubblewrapOptions({ ...layout, hidden: this.hidden }), '--', command, ...args], command: this.bwrap };
  }

  private async probe(): Promise<AgentIsolation> {
    // The lock file exists from before start: the sandbox must start and must not show it.
    const probe = await probeBubblewrap({
      cwd: this.runtime.paths.root,
      hidden: this.hidden,
      mode: this.configuration.get('agentIsolation'),
      searchPath: process.env.PATH ?? '',
      witness: this.runtime.paths.lockPath,
    });
    this.bwrap = probe.bwrap;
    return probe.isolation;
  }
}

export interface BubblewrapProbe {
  mode: 'auto' | 'off';
  searchPath: string;
  cwd: string;
  hidden: string[];
  /** An existing file inside `hidden`: the sandbox must start and must not show it. */
  witness: string;
}

/**
 * Whether agents can be isolated here: bubblewrap found, and a sandbox with the very options
 * runs use starts and hides `witness`. The manager probes once at start; `doctor` probes the same
 * way on a temporary tree.
 */
export async function probeBubblewrap(probe: BubblewrapProbe): Promise<{ isolation: AgentIsolation; bwrap: string | null }> {
  const off = (reason: string) => ({ bwrap: null, isolation: { enabled: false, mechanism: null, reason } satisfies AgentIsolation });
  if (probe.mode === 'off') {
    return off('agentIsolation is "off" in the configuration');
  }
  if (process.platform !== 'linux') {
    return off(`agent isolation uses bubblewrap, which needs Linux (this is ${process.platform})`);
  }
  const bwrap = findExecutable('bwrap', probe.searchPath, probe.cwd);
  if (bwrap === null) {
    return off('bubblewrap (`bwrap`) is not installed; install the bubblewrap package (for example apt-get install bubblewrap)');
  }
  const options = bubblewrapOptions({ cwd: probe.cwd, hidden: probe.hidden, readOnlyFiles: [] });
  const result = await run(bwrap, [...options, '--', 'test', '!', '-e', probe.witness]);
  if (result.code === 0) {
    return { bwrap, isolation: { enabled: true, mechanism: 'bubblewrap', reason: null } };
  }
  if (result.error) {
    return off(`bubblewrap could not be run: ${result.error}`);
  }
  const said = result.stderr.trim().split('\n')[0];
  return said
    ? off(`bubblewrap cannot create the sandbox here (${said}); user namespaces may be disabled or restricted`)
    : off(`bubblewrap started but did not hide ${probe.witness}`);
}

function run(command: string, args: string[]): Promise<{ code: number | null; stderr: string; error: string | null }> {
  return new Promise((resolve) => {
    let stderr = '';
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), PROBE_TIMEOUT_MS);
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4096)));
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, error: err.message, stderr });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, error: signal === 'SIGKILL' ? `no answer within ${PROBE_TIMEOUT_MS / 1000} s` : null, stderr });
    });
  });
}
