import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';

import type { AgentIsolation } from '@libs/contracts';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { packageRoot } from '../core/package-info';
import { RUNTIME, Runtime } from '../core/runtime';
import { bubblewrapOptions, seatbeltProfile } from './sandbox-arguments';
import {
  COMMONDIR_PLACEHOLDER,
  DEFAULT_WRITABLE_CACHES,
  PROTECTED_HOME_ENTRIES,
  SANDBOX_RELAY,
  SandboxLayout,
  SandboxScope,
} from './sandbox-layout';
import { probeNetworkNamespace, probeSandbox } from './sandbox-probe';

/** Removes a `commondir` placeholder (a regular file naming its own directory), and nothing else. */
function removePlaceholder(file: string): void {
  try {
    const stat = fs.lstatSync(file);
    if (
      stat.isFile() &&
      stat.size === COMMONDIR_PLACEHOLDER.length &&
      fs.readFileSync(file, 'utf8') === COMMONDIR_PLACEHOLDER
    ) {
      fs.rmSync(file);
    }
  } catch {
    // Not there: nothing to remove.
  }
}

/**
 * The configuration, hooks and info of every submodule's repository under `modules/` (nested
 * ones too): read-only in place, like the repository's own. Bounded: a few hundred folders.
 */
function submoduleSettings(modules: string): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries.slice(0, 500)) {
      if (!entry.isDirectory()) {
        continue;
      }
      const child = path.join(dir, entry.name);
      if (fs.existsSync(path.join(child, 'HEAD'))) {
        found.push(...['config', 'hooks', 'info'].map((name) => path.join(child, name)));
        if (depth < 4) {
          walk(path.join(child, 'modules'), depth + 1);
        }
      } else if (depth < 4) {
        // A submodule named with slashes (`libs/a`) lives in nested folders.
        walk(child, depth + 1);
      }
    }
  };
  walk(modules, 0);
  return found;
}

/** `~/x` against HOME; absolute paths as they are; anything else is not a path we bind. */
export function expandHome(entry: string, home: string): string | null {
  if (entry === '~') {
    return home;
  }
  if (entry.startsWith('~/')) {
    return path.join(home, entry.slice(2));
  }
  return path.isAbsolute(entry) ? path.normalize(entry) : null;
}

/**
 * Starts agent processes (RD and reviewer, every provider, and the worktree's setup and teardown
 * commands) in a sandbox in which (docs/security.md):
 * - the `workspaces/` tree of the Agent Manager home (tokens, databases, configuration, logs,
 *   other Requirements' attachments), other Requirements' worktrees and other runs' temporary
 *   directories are empty;
 * - only the agent's own work tree, its private temporary directory, what git needs to commit
 *   and fetch, its CLI's state, toolchain caches and `agentWritablePaths` are writable; the
 *   person's checkout, git's configuration and hooks, the launcher, Agent Manager's installation
 *   and the user's shell and tool configuration are read-only.
 * bubblewrap on Linux, Seatbelt (`sandbox-exec`) on macOS. Probed once at start with the very
 * options runs use; where neither works runs go on unisolated and the banner, the log and
 * `GET /api/health` say so.
 */
@Injectable()
export class AgentSandbox implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(AgentSandbox.name);
  private state: AgentIsolation = { enabled: false, mechanism: null, reason: 'not probed yet' };
  private program: string | null = null;
  /** The trees every agent is kept out of. */
  readonly hidden: string[];
  /** `commondir` placeholders made for runs in place (removed when this manager stops). */
  private readonly placeholders = new Set<string>();

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

  /**
   * Why runs cannot have a network of their own here, or null when they can (issue 45): the
   * sandbox is bubblewrap, the relay is built, and a network namespace starts. Probed once.
   */
  networkUnavailable(): Promise<string | null> {
    this.networkProbe ??= this.probeNetwork();
    return this.networkProbe;
  }

  private networkProbe: Promise<string | null> | null = null;

  private async probeNetwork(): Promise<string | null> {
    if (!this.state.enabled || this.program === null) {
      return `agents are not sandboxed (${this.state.reason ?? 'no sandbox'})`;
    }
    if (this.state.mechanism === 'seatbelt') {
      // Seatbelt filters by port, not by namespace: its profile is checked where the sandbox was.
      return fs.existsSync(SANDBOX_RELAY)
        ? null
        : `the network proxy is not built (${SANDBOX_RELAY}); run npm run build`;
    }
    return probeNetworkNamespace(this.program);
  }

  /** Where runs' private temporary directories live (concealed from every other run). */
  get temporaryRoot(): string {
    return path.join(this.runtime.paths.home, 'tmp');
  }

  /** The `commondir` placeholders of runs in place go with the manager (no run is left to need them). */
  onApplicationShutdown(): void {
    for (const file of this.placeholders) {
      removePlaceholder(file);
    }
  }

  async onModuleInit(): Promise<void> {
    // One a killed manager left behind (the workspace's own git directory is the only place for it).
    removePlaceholder(path.join(this.runtime.paths.root, '.git', 'commondir'));
    this.state = await this.probe();
    if (this.state.enabled) {
      this.logger.log(
        `agents run in a ${this.state.mechanism} sandbox that hides ${this.hidden.join(', ')} and keeps them to their own worktree`,
      );
    } else {
      this.logger.warn(
        `agents are not isolated: ${this.state.reason}. An agent can read this workspace's token and act as its owner (see docs/security.md).`,
      );
    }
  }

  /** The layout for one agent process: the rules above, for this scope. */
  layout(scope: SandboxScope): SandboxLayout {
    const home = scope.env.HOME ?? os.homedir();
    const worktreeRoot = this.configuration.get('worktreeRoot') ?? path.join(this.runtime.paths.home, 'worktrees');
    const sized = scope.caps != null && this.state.mechanism === 'bubblewrap';
    // With its own sized /tmp, the run's $TMPDIR is a link to it (bound nowhere); else its directory.
    const writable = [scope.workTree, ...(scope.tmp === null || sized ? [] : [scope.tmp]), ...(scope.shared ?? [])];
    const readOnly = [
      this.runtime.paths.launcherDirectory,
      packageRoot(),
      ...PROTECTED_HOME_ENTRIES.map((entry) => path.join(home, entry)),
    ];
    const protectedRoots = [this.runtime.paths.root, this.runtime.paths.home, home];
    if (scope.git?.kind === 'own') {
      // Its own repository lies inside its work tree; the person's, whose objects it reads, stays read-only.
      protectedRoots.push(scope.git.personCommonDir);
    } else if (scope.git?.kind === 'shared') {
      const { commonDir, gitDir } = scope.git;
      protectedRoots.push(commonDir);
      if (gitDir === commonDir) {
        // The person's own repository, worked in place: its git directory is the agent's too,
        // but not what runs code for whoever uses it next, nor what would send git elsewhere.
        writable.push(commonDir);
      } else {
        // The person's checkout is itself a linked worktree: commits write objects, refs and their
        // logs in the shared directory, and HEAD, index and logs in the checkout's entry.
        writable.push(...['objects', 'refs', 'logs'].map((dir) => path.join(commonDir, dir)), gitDir);
        readOnly.push(
          path.join(gitDir, 'config.worktree'),
          path.join(gitDir, 'gitdir'),
          path.join(scope.workTree, '.git'),
        );
      }
      readOnly.push(
        ...['config', 'config.worktree', 'hooks', 'info', 'worktrees'].map((entry) => path.join(commonDir, entry)),
        path.join(gitDir, 'commondir'),
        path.join(gitDir, 'HEAD'),
        ...submoduleSettings(path.join(commonDir, 'modules')),
      );
    }
    writable.push(...this.stateDirectories(scope.provider, scope.env, home));
    // Codex's config.toml stays the person's, though its folder is the CLI's to write: the manager
    // reads the model API it names (always reachable) and its key's variable (passed to agents)
    // from it, so an agent that rewrote it would open the network, or get a secret, next run.
    readOnly.push(path.join(scope.env.CODEX_HOME ?? path.join(home, '.codex'), 'config.toml'));
    writable.push(...DEFAULT_WRITABLE_CACHES.map((entry) => path.join(home, entry)));
    for (const entry of this.configuration.get('agentWritablePaths')) {
      const expanded = expandHome(entry, home);
      if (expanded !== null) {
        writable.push(expanded);
      }
    }
    return {
      concealed: [worktreeRoot, this.temporaryRoot],
      cwd: scope.cwd,
      hidden: this.hidden,
      protectedRoots,
      readOnly,
      readOnlyFiles: scope.readOnlyFiles,
      // The secrets' files (issue 45): never readable by anything a run starts, setup included.
      unreadable: this.configuration.get('secrets').flatMap((secret) => (secret.file ? [secret.file] : [])),
      temporary:
        sized && scope.caps
          ? { shmBytes: scope.caps.values.shmBytes, tmpBytes: scope.caps.values.tmpBytes, tmpLink: scope.tmp }
          : null,
      writable,
      ...(scope.network ? { network: scope.network } : {}),
    };
  }

  /**
   * The command line that runs `command args` in the sandbox (unchanged when there is none), in
   * the run's pids cgroup when it has one: its first process joins it before it execs anything
   * (and fails the run if it cannot), so nothing of the run escapes the count.
   */
  wrap(command: string, args: string[], scope: SandboxScope): { command: string; args: string[] } {
    const wrapped = this.sandboxed(command, args, scope);
    const procs = scope.caps?.cgroupProcs ?? null;
    return procs === null
      ? wrapped
      : { args: ['-c', 'echo $$ > "$0" && exec "$@"', procs, wrapped.command, ...wrapped.args], command: '/bin/sh' };
  }

  private sandboxed(command: string, args: string[], scope: SandboxScope): { command: string; args: string[] } {
    if (!this.state.enabled || this.program === null) {
      return { args, command };
    }
    this.prepare(scope);
    const layout = this.layout(scope);
    if (this.state.mechanism === 'seatbelt') {
      return { args: ['-p', seatbeltProfile(layout), command, ...args], command: this.program };
    }
    const network = layout.network;
    const relayed =
      network?.kind === 'proxy' && network.socketPath !== null
        ? [
            process.execPath,
            SANDBOX_RELAY,
            network.socketPath,
            String(network.proxyPort),
            network.forwardPorts.length > 0 ? network.forwardPorts.join(',') : '-',
            network.expose?.socketPath ?? '-',
            network.expose ? network.expose.ports.join(',') : '-',
            '--',
            command,
            ...args,
          ]
        : [command, ...args];
    // RLIMIT_NPROC counts per user namespace: inside the sandbox it caps this run alone.
    const inner = scope.caps?.prlimit
      ? [scope.caps.prlimit, `--nproc=${scope.caps.values.processes}`, '--', ...relayed]
      : relayed;
    return { args: [...bubblewrapOptions(layout), '--', ...inner], command: this.program };
  }

  /** A private temporary directory for one run (mode 0700), concealed from every other. */
  makeTemporary(runId: string): string {
    const dir = path.join(this.temporaryRoot, runId);
    fs.mkdirSync(dir, { mode: 0o700, recursive: true });
    return dir;
  }

  removeTemporary(runId: string): void {
    fs.rmSync(path.join(this.temporaryRoot, runId), { force: true, recursive: true });
  }

  /**
   * What must exist before the mounts: the CLI's state directory (else the CLI could not create
   * it in a read-only HOME), and git's `hooks/` and `info/` (else an agent could create them in
   * a git directory it may write, in place).
   */
  private prepare(scope: SandboxScope): void {
    const home = scope.env.HOME ?? os.homedir();
    for (const dir of this.stateDirectories(scope.provider, scope.env, home).filter((dir) => !dir.endsWith('.json'))) {
      fs.mkdirSync(dir, { mode: 0o700, recursive: true });
    }
    if (scope.git?.kind === 'shared') {
      for (const entry of ['hooks', 'info', 'worktrees']) {
        fs.mkdirSync(path.join(scope.git.commonDir, entry), { recursive: true });
      }
      // A `commondir` would send the person's next git to whatever repository it names (with an
      // fsmonitor of the agent's choosing): one that names this directory itself is read-only
      // instead, for as long as this manager runs (`removePlaceholders` at start and stop).
      const commondir = path.join(scope.git.gitDir, 'commondir');
      if (scope.git.gitDir === scope.git.commonDir && !fs.existsSync(commondir)) {
        fs.writeFileSync(commondir, COMMONDIR_PLACEHOLDER, { flag: 'wx' });
        this.placeholders.add(commondir);
      }
    }
  }

  /** The agent CLI's own state: sessions, logins, settings it rewrites. */
  private stateDirectories(provider: SandboxScope['provider'], env: Record<string, string>, home: string): string[] {
    if (provider === 'codex') {
      return [env.CODEX_HOME ?? path.join(home, '.codex')];
    }
    if (provider === 'claude-code') {
      return env.CLAUDE_CONFIG_DIR
        ? [env.CLAUDE_CONFIG_DIR]
        : [path.join(home, '.claude'), path.join(home, '.claude.json')];
    }
    return [];
  }

  private async probe(): Promise<AgentIsolation> {
    // The lock file exists from before start: the sandbox must start and must not show it.
    const probe = await probeSandbox({
      cwd: this.runtime.paths.root,
      hidden: this.hidden,
      mode: this.configuration.get('agentIsolation'),
      searchPath: process.env.PATH ?? '',
      witness: this.runtime.paths.lockPath,
    });
    this.program = probe.program;
    return probe.isolation;
  }
}
