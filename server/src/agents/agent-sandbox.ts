import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';

import type { AgentIsolation } from '@libs/contracts';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { packageRoot } from '../core/package-info';
import { RUNTIME, Runtime } from '../core/runtime';
import { findExecutable } from './executable';
import type { RunCaps } from './run-limits';

/**
 * What one agent process may see and write (docs/security.md, "The agent sandbox"). Applied in
 * this order, so that a later layer always wins over an earlier one: the whole file system
 * read-only (the shared temporary directories writable), `protectedRoots` read-only again,
 * `writable`, `readOnly`, then `hidden` and `concealed` emptied, then whatever of `writable` and
 * `readOnlyFiles` lies inside an emptied tree bound back.
 */
export interface SandboxLayout {
  /** Replaced by an empty tmpfs: every workspace's data (tokens, databases, logs…). */
  hidden: string[];
  /** Replaced by an empty tmpfs as well: other Requirements' worktrees, other runs' temporary directories. */
  concealed: string[];
  /**
   * Read-only before anything is made writable: the trees that hold what is protected, for the
   * case that they lie inside a writable one (a workspace or HOME under /tmp).
   */
  protectedRoots: string[];
  /** Writable: the agent's own work tree and temporary directory, git's shared stores, its CLI's state, configured extras. */
  writable: string[];
  /** Read-only again inside a writable tree: git's configuration and hooks, the launcher, shell and tool configuration. */
  readOnly: string[];
  /** Files inside the hidden trees bound back read-only: the run's own attachments. */
  readOnlyFiles: string[];
  /**
   * Files nothing in the sandbox may read, wherever they lie, applied last: the configured secrets'
   * files (issue 45), which an agent running as their owner could otherwise read (0600 does not
   * keep out the same user).
   */
  unreadable?: string[];
  /** The process's working directory. */
  cwd: string;
  /**
   * The run's own temporary space (issue 44 §5): `/tmp` and `/var/tmp` a tmpfs of this size each,
   * `/dev/shm` one of `shmBytes`, and `tmpLink` (its $TMPDIR) a link to its `/tmp`; null: the
   * shared `/tmp` and `/var/tmp` as they are (no run: a doctor's probe).
   */
  temporary: { tmpBytes: number; shmBytes: number; tmpLink: string | null } | null;
  /**
   * Its network (issue 45): the host's (absent or `host`), none at all (`none`: a network
   * namespace with loopback alone), or one whose only way out is the run's proxy (`proxy`: its
   * socket's directory bound in, whatever hides the tree it lies in).
   */
  network?: SandboxNetwork;
}

/**
 * What of the network a sandboxed process reaches (issue 45). `proxy` with bubblewrap: a network
 * namespace of its own whose only way out is the run's egress proxy, a Unix socket (`socketPath`);
 * the relay (sandbox-relay.ts), its first process, serves that socket on loopback at `proxyPort`
 * and forwards `forwardPorts` (Agent Manager's own, a loopback model server's) through it. With
 * Seatbelt (no namespaces): the proxy listens on the host's loopback at `proxyPort`
 * (`socketPath` null), and the profile lets the process reach that port and `forwardPorts` alone.
 */
export type SandboxNetwork =
  | { kind: 'host' }
  | { kind: 'none' }
  | { kind: 'proxy'; socketPath: string | null; proxyPort: number; forwardPorts: number[] };

/**
 * The relay a `proxy` network runs first in the sandbox: compiled beside this file's feature, or,
 * when the server runs from its TypeScript source (the in-process suites), the built one.
 */
export const SANDBOX_RELAY =
  [
    path.resolve(__dirname, '..', 'network', 'sandbox-relay.js'),
    path.join(packageRoot(), 'dist', 'server', 'src', 'network', 'sandbox-relay.js'),
  ].find((file) => fs.existsSync(file)) ?? path.resolve(__dirname, '..', 'network', 'sandbox-relay.js');

/**
 * What of git an agent process works with (issue 44): `own`, a repository of its own inside its
 * work tree (the person's repository, whose objects it borrows, read-only); `shared`, the
 * person's own repository in place (the person's explicit choice), which it then writes.
 */
export type SandboxGit =
  { kind: 'own'; personCommonDir: string } | { kind: 'shared'; gitDir: string; commonDir: string };

/** What a `commondir` placeholder holds in place: this same directory (git reads it as no link at all). */
export const COMMONDIR_PLACEHOLDER = '.\n';

/** What the caller knows about where an agent process works; AgentSandbox adds the rest. */
export interface SandboxScope {
  cwd: string;
  /** The tree the agent works in: its worktree's top, or the person's checkout in place. */
  workTree: string;
  /** git's place for it, or null outside a repository. */
  git: SandboxGit | null;
  /** The run's private temporary directory (its TMPDIR), or null. */
  tmp: string | null;
  /** The run's limits (run-limits.ts), or null for none (a teardown after its run). */
  caps?: RunCaps | null;
  /** The agent CLI whose own state must stay writable, or null for a shell command (setup). */
  provider: 'codex' | 'claude-code' | null;
  /** The environment the process gets (where CODEX_HOME, CLAUDE_CONFIG_DIR and HOME come from). */
  env: Record<string, string>;
  readOnlyFiles: string[];
  /** Its network (absent: the host's). */
  network?: SandboxNetwork;
}

/**
 * Capabilities that would undo the hiding for an agent running as root: `CAP_SYS_ADMIN` can
 * unmount the tmpfs or enter another mount namespace, `CAP_DAC_READ_SEARCH` can open files by
 * inode handle (`open_by_handle_at`) past any mount. A normal user has neither; for root the
 * rest (reading files of other users, package managers…) stays as it was.
 */
const DROPPED_CAPABILITIES = ['CAP_SYS_ADMIN', 'CAP_DAC_READ_SEARCH'];

/** Shared temporary directories tools write to by fixed path: writable, minus what is protected. */
const SHARED_TEMPORARY = ['/tmp', '/var/tmp'];

/**
 * A user's shell and tool configuration in HOME: read-only even when a configured writable path
 * contains it, since the person's own shells and tools run it (a planted `~/.bashrc`, a
 * `~/.local/bin/git` first on PATH, an `~/.ssh/config` ProxyCommand).
 */
export const PROTECTED_HOME_ENTRIES = [
  '.bashrc',
  '.bash_profile',
  '.bash_login',
  '.bash_logout',
  '.profile',
  '.zshrc',
  '.zshenv',
  '.zprofile',
  '.zlogin',
  '.inputrc',
  '.gitconfig',
  '.git-credentials',
  '.ssh',
  '.gnupg',
  '.config/git',
  '.config/fish',
  '.config/gh',
  '.local/bin',
  '.npmrc',
  '.netrc',
  '.aws',
  '.kube',
  '.docker',
];

/**
 * Caches toolchains write while building and testing: writable by default (an agent must be able
 * to `npm install` or `cargo build`). They are shared with the person's own tools: see
 * docs/security.md for what that leaves open; `agentWritablePaths` replaces nothing, it adds.
 */
export const DEFAULT_WRITABLE_CACHES = [
  '.cache',
  '.npm',
  '.yarn',
  '.pnpm-store',
  '.local/share/pnpm',
  '.cargo/registry',
  '.cargo/git',
  'go/pkg/mod',
  '.m2/repository',
  '.gradle/caches',
];

const PROBE_TIMEOUT_MS = 10_000;

function inside(file: string, dir: string): boolean {
  const relative = path.relative(dir, file);
  return relative === '' || (!relative.startsWith(`..${path.sep}`) && relative !== '..' && !path.isAbsolute(relative));
}

function exists(file: string): boolean {
  return fs.existsSync(file);
}

/**
 * bubblewrap's options for a layout (what goes before `--` and the command). A new PID namespace
 * with its own /proc is part of the hiding: through the host's /proc an agent could walk into any
 * of the user's processes' mount namespaces (`/proc/<pid>/root/…`), open files (`fd/`) or
 * environments (`environ`: another run's credential). The manager still sees every process of
 * the run (its namespace is the parent one), so the marker-based tree kill works unchanged.
 * Paths that do not exist are left out (bwrap would fail on them, or create mount points on the
 * real file system).
 */
export function bubblewrapOptions(layout: SandboxLayout): string[] {
  const args = ['--ro-bind', '/', '/', '--dev-bind', '/dev', '/dev'];
  const temporary = layout.temporary;
  if (temporary !== null && exists('/dev/shm')) {
    args.push('--size', String(temporary.shmBytes), '--tmpfs', '/dev/shm');
  }
  args.push('--unshare-pid', '--proc', '/proc');
  if (layout.network !== undefined && layout.network.kind !== 'host') {
    // Loopback alone (bubblewrap brings it up): no interface, no route, no DNS server.
    args.push('--unshare-net');
  }
  for (const cap of DROPPED_CAPABILITIES) {
    args.push('--cap-drop', cap);
  }
  for (const dir of SHARED_TEMPORARY.filter(exists)) {
    // The run's own, sized and gone with it; or the shared ones (what the paths below bind into).
    args.push(...(temporary !== null ? ['--size', String(temporary.tmpBytes), '--tmpfs', dir] : ['--bind', dir, dir]));
  }
  for (const dir of unique(layout.protectedRoots).filter(exists)) {
    args.push('--ro-bind', dir, dir);
  }
  for (const dir of unique(layout.writable).filter(exists)) {
    args.push('--bind', dir, dir);
  }
  for (const file of unique(layout.readOnly).filter(exists)) {
    args.push('--ro-bind', file, file);
  }
  const emptied = unique([...layout.hidden, ...layout.concealed]).filter(exists);
  for (const dir of emptied) {
    args.push('--tmpfs', dir);
  }
  const within = (file: string) => emptied.some((dir) => inside(file, dir));
  for (const dir of unique([
    ...layout.writable,
    ...(layout.writable.some((w) => inside(layout.cwd, w)) ? [] : [layout.cwd]),
  ]).filter(exists)) {
    if (within(dir)) {
      args.push('--bind', dir, dir);
    }
  }
  for (const file of unique(layout.readOnly).filter(exists)) {
    // Protected files inside a tree just bound back (a worktree's `.git` link).
    if (within(file)) {
      args.push('--ro-bind', file, file);
    }
  }
  for (const file of unique(layout.readOnlyFiles).filter(exists)) {
    // Outside the hidden trees a file is visible anyway.
    if (layout.hidden.some((dir) => inside(file, dir))) {
      args.push('--ro-bind', file, file);
    }
  }
  if (layout.network?.kind === 'proxy' && layout.network.socketPath !== null) {
    // The proxy's socket lies in the concealed tree of runs' temporary directories: its own bound back.
    const socketDir = path.dirname(layout.network.socketPath);
    args.push('--bind', socketDir, socketDir);
  }
  for (const file of unique(layout.unreadable ?? []).filter(exists)) {
    args.push('--ro-bind', '/dev/null', file);
  }
  if (temporary?.tmpLink) {
    // $TMPDIR is the run's own /tmp: one size for both.
    args.push('--symlink', '/tmp', temporary.tmpLink);
  }
  args.push('--chdir', layout.cwd);
  return args;
}

/**
 * The same rules as a macOS Seatbelt profile (`sandbox-exec -p`): writes denied outside the
 * writable trees, the read-only ones denied again inside them, the hidden and concealed trees
 * neither readable nor writable, own attachments and the work tree readable again. Later rules
 * win over earlier ones in Seatbelt as layers do in bubblewrap.
 */
export function seatbeltProfile(layout: SandboxLayout): string {
  const quote = (p: string) => `"${p.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  const subpaths = (list: string[]) => unique(list).map((p) => `(subpath ${quote(p)})`);
  const literals = (list: string[]) => unique(list).map((p) => `(literal ${quote(p)})`);
  const lines = ['(version 1)', '(allow default)', '(deny file-write*)'];
  const writable = subpaths([
    ...SHARED_TEMPORARY,
    '/private/tmp',
    '/private/var/folders',
    '/dev',
    ...layout.writable,
    layout.cwd,
  ]);
  lines.push(`(allow file-write* ${writable.join(' ')})`);
  if (layout.readOnly.length > 0 || layout.protectedRoots.length > 0) {
    const rewritable = new Set([...layout.writable, layout.cwd]);
    const roots = layout.protectedRoots.filter((root) => ![...rewritable].some((w) => inside(w, root)));
    lines.push(
      `(deny file-write* ${[...subpaths(roots), ...subpaths(layout.readOnly)].join(' ')})`.replace(/ \)$/, ')'),
    );
  }
  const emptied = [...layout.hidden, ...layout.concealed];
  if (emptied.length > 0) {
    lines.push(`(deny file-read* file-write* ${subpaths(emptied).join(' ')})`);
    const back = unique([...layout.writable, layout.cwd]).filter((w) => emptied.some((dir) => inside(w, dir)));
    if (back.length > 0) {
      lines.push(`(allow file-read* file-write* ${subpaths(back).join(' ')})`);
      const again = layout.readOnly.filter((file) => back.some((dir) => inside(file, dir)));
      if (again.length > 0) {
        lines.push(`(deny file-write* ${subpaths(again).join(' ')})`);
      }
    }
    const files = layout.readOnlyFiles.filter((file) => layout.hidden.some((dir) => inside(file, dir)));
    if (files.length > 0) {
      lines.push(`(allow file-read* ${literals(files).join(' ')})`);
    }
  }
  if ((layout.unreadable ?? []).length > 0) {
    lines.push(`(deny file-read* file-write* ${literals(layout.unreadable ?? []).join(' ')})`);
  }
  const network = layout.network;
  if (network !== undefined && network.kind !== 'host') {
    // No namespaces here: every outbound connection is denied but to the run's proxy on loopback
    // and the ports it forwards (Agent Manager, a loopback model server), which it may dial directly.
    lines.push('(deny network-outbound)');
    const ports = network.kind === 'proxy' ? [network.proxyPort, ...network.forwardPorts] : [];
    for (const port of [...new Set(ports)]) {
      lines.push(`(allow network-outbound (remote ip "localhost:${port}"))`);
    }
  }
  return `${lines.join('\n')}\n`;
}

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

function unique(list: string[]): string[] {
  return [...new Set(list)];
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

type Mechanism = NonNullable<AgentIsolation['mechanism']> | null;

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
    const writable = [scope.workTree, ...(scope.tmp === null || sized ? [] : [scope.tmp])];
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

/**
 * Why bubblewrap (`program`) cannot give a run a network namespace of its own here, or null when
 * it can: the relay is built and a namespace starts. The manager asks once; `doctor` asks too.
 */
export async function probeNetworkNamespace(program: string): Promise<string | null> {
  if (!fs.existsSync(SANDBOX_RELAY)) {
    return `the network relay is not built (${SANDBOX_RELAY}); run npm run build`;
  }
  // Node itself as the command: it is there whatever PATH the caller has (doctor's may be bare).
  const result = await run(program, [
    '--unshare-net',
    '--ro-bind',
    '/',
    '/',
    '--dev-bind',
    '/dev',
    '/dev',
    '--',
    process.execPath,
    '-e',
    '',
  ]);
  if (result.code === 0) {
    return null;
  }
  const said = result.error ?? (result.stderr.trim().split('\n')[0] || `exit ${result.code}`);
  return `bubblewrap cannot make a network namespace here (${said}); user namespaces may be restricted`;
}

export interface SandboxProbe {
  mode: 'auto' | 'off';
  searchPath: string;
  cwd: string;
  hidden: string[];
  /** An existing file inside `hidden`: the sandbox must start and must not show it. */
  witness: string;
}

/**
 * Whether agents can be isolated here: bubblewrap (Linux) or sandbox-exec (macOS) found, and a
 * sandbox with the options runs use starts and hides `witness`. The manager probes once at start;
 * `doctor` probes the same way on a temporary tree.
 */
export async function probeSandbox(
  probe: SandboxProbe,
): Promise<{ isolation: AgentIsolation; program: string | null }> {
  const off = (reason: string) => ({
    isolation: { enabled: false, mechanism: null, reason } satisfies AgentIsolation,
    program: null,
  });
  if (probe.mode === 'off') {
    return off('agentIsolation is "off" in the configuration');
  }
  const layout: SandboxLayout = {
    concealed: [],
    cwd: probe.cwd,
    hidden: probe.hidden,
    protectedRoots: [],
    readOnly: [],
    readOnlyFiles: [],
    temporary: null,
    writable: [probe.cwd],
  };
  let mechanism: Mechanism;
  let program: string | null;
  let args: string[];
  if (process.platform === 'linux') {
    mechanism = 'bubblewrap';
    program = findExecutable('bwrap', probe.searchPath, probe.cwd);
    if (program === null) {
      return off(
        'bubblewrap (`bwrap`) is not installed; install the bubblewrap package (for example apt-get install bubblewrap)',
      );
    }
    args = [...bubblewrapOptions(layout), '--', 'test', '!', '-e', probe.witness];
  } else if (process.platform === 'darwin') {
    mechanism = 'seatbelt';
    program = fs.existsSync('/usr/bin/sandbox-exec') ? '/usr/bin/sandbox-exec' : null;
    if (program === null) {
      return off('sandbox-exec (Seatbelt) is not available on this Mac');
    }
    args = ['-p', seatbeltProfile(layout), '/bin/test', '!', '-r', probe.witness];
  } else {
    return off(`agent isolation needs Linux (bubblewrap) or macOS (Seatbelt); this is ${process.platform}`);
  }
  const result = await run(program, args);
  if (result.code === 0) {
    return { isolation: { enabled: true, mechanism, reason: null }, program };
  }
  const name = mechanism === 'bubblewrap' ? 'bubblewrap' : 'sandbox-exec';
  if (result.error) {
    return off(`${name} could not be run: ${result.error}`);
  }
  const said = result.stderr.trim().split('\n')[0];
  return said
    ? off(
        `${name} cannot create the sandbox here (${said})${mechanism === 'bubblewrap' ? '; user namespaces may be disabled or restricted' : ''}`,
      )
    : off(`${name} started but did not hide ${probe.witness}`);
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
