import * as fs from 'node:fs';
import * as path from 'node:path';

import { packageRoot } from '../core/package-info';
import type { RunCaps } from './run-limits';

// What a sandbox is made of: the layout one agent process gets (what it sees, writes, reaches), and
// the fixed lists every layout starts from.

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
  | {
      kind: 'proxy';
      socketPath: string | null;
      proxyPort: number;
      forwardPorts: number[];
      /**
       * A preview's own ports (issue 48 §2), served to the host through the relay's expose socket
       * (a Unix socket in the proxy socket's directory); absent for agent runs.
       */
      expose?: { socketPath: string; ports: number[] };
    };

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
  /** Directories of the manager's it shares with the process, writable (a terminal's control socket's). */
  shared?: string[];
}

/**
 * Capabilities that would undo the hiding for an agent running as root: `CAP_SYS_ADMIN` can
 * unmount the tmpfs or enter another mount namespace, `CAP_DAC_READ_SEARCH` can open files by
 * inode handle (`open_by_handle_at`) past any mount. A normal user has neither; for root the
 * rest (reading files of other users, package managers…) stays as it was.
 */
export const DROPPED_CAPABILITIES = ['CAP_SYS_ADMIN', 'CAP_DAC_READ_SEARCH'];

/**
 * Host devices bound into every sandbox's own /dev where they exist (besides null, zero, random,
 * tty, a private pts…): virtualisation (emulators), GPUs' render nodes, FUSE, tun.
 */
export const PASSED_DEVICES = ['/dev/kvm', '/dev/dri', '/dev/fuse', '/dev/net/tun'];

/** Shared temporary directories tools write to by fixed path: writable, minus what is protected. */
export const SHARED_TEMPORARY = ['/tmp', '/var/tmp'];

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
