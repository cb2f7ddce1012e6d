import * as fs from 'node:fs';
import * as path from 'node:path';

import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { RUNTIME, Runtime } from '../core/runtime';
import { findExecutable } from './executable';

/**
 * Limits per run (issue 44 §5): how many processes a run may have at once, and how much its
 * temporary space (`/tmp`, `/var/tmp` and `$TMPDIR`, a tmpfs of its own) and `/dev/shm` may hold.
 * The kernel enforces them; the manager watches for a run that hit one and fails that run, with
 * the reason, so that no other run is harmed (a fork bomb would otherwise take the machine's
 * process table, a full `/tmp` everyone's temporary files).
 *
 * Processes are capped by a pids cgroup of the run's own where the machine lets this manager make
 * one (cgroup v1's `pids` hierarchy, or a v2 subtree delegated to it), else by RLIMIT_NPROC set
 * inside the sandbox (`prlimit`), which Linux counts per user namespace — each sandbox has its own
 * — but never applies to root. The sizes are bubblewrap's tmpfs sizes (AgentSandbox).
 */

export interface RunLimitValues {
  processes: number;
  tmpBytes: number;
  shmBytes: number;
}

/** How a run's processes are capped here, and why when they are not. */
export type ProcessCapMechanism =
  { kind: 'cgroup'; root: string } | { kind: 'rlimit'; prlimit: string } | { kind: 'none'; reason: string };

/** What one run's sandbox needs to apply the limits. */
export interface RunCaps {
  values: RunLimitValues;
  /** `cgroup.procs` of the run's own pids cgroup: its first process joins it before anything else runs. */
  cgroupProcs: string | null;
  /** `prlimit` to run inside the sandbox with `--nproc`, when that is how processes are capped. */
  prlimit: string | null;
}

const MB = 1024 * 1024;
const WATCH_MS = 2_000;
/** Processes of a run looked at for its sandbox's mount namespace (the first few are the launchers). */
const DESCENDANTS_MAX = 64;

/** A run's processes below `rootPid`, breadth first, at most DESCENDANTS_MAX (children lists, not a /proc scan). */
function descendants(rootPid: number): number[] {
  const found: number[] = [];
  const queue = [rootPid];
  while (queue.length > 0 && found.length < DESCENDANTS_MAX) {
    const pid = queue.shift() as number;
    found.push(pid);
    try {
      for (const child of fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)) {
        if (child !== '') {
          queue.push(Number(child));
        }
      }
    } catch {
      // gone, or not Linux
    }
  }
  return found;
}

/**
 * Whether the run's own /tmp is full: read through the first of its processes that lives in the
 * sandbox's mount namespace (its /tmp is that namespace's tmpfs). Null when not, or when no such
 * process is there to ask.
 */
export function temporaryFull(
  rootPid: number,
  caps: RunCaps,
  seen: { pid: number | null } = { pid: null },
): string | null {
  const full = (pid: number): string | null | undefined => {
    try {
      const stat = fs.statfsSync(`/proc/${pid}/root/tmp`);
      // Full, give or take a few blocks git or a shell may still find.
      return stat.bavail * stat.bsize < Math.min(1 * MB, caps.values.tmpBytes / 100)
        ? `it filled its temporary space (/tmp, /var/tmp and $TMPDIR: ${Math.round(caps.values.tmpBytes / MB)} MB, agentTmpSizeMb)`
        : null;
    } catch {
      return undefined; // gone meanwhile
    }
  };
  // The sandbox's first process lives as long as the sandbox: once found, it is asked directly.
  if (seen.pid !== null) {
    const answer = full(seen.pid);
    if (answer !== undefined) {
      return answer;
    }
    seen.pid = null;
  }
  let own: string;
  try {
    own = fs.readlinkSync('/proc/self/ns/mnt');
  } catch {
    return null;
  }
  for (const pid of descendants(rootPid)) {
    try {
      if (fs.readlinkSync(`/proc/${pid}/ns/mnt`) === own) {
        continue;
      }
    } catch {
      continue;
    }
    const answer = full(pid);
    if (answer !== undefined) {
      seen.pid = pid;
      return answer;
    }
  }
  return null;
}

/** Reads the cgroups of this process: the v1 `pids` hierarchy's path, and the v2 one. */
function ownCgroups(): { pids: string | null; unified: string | null } {
  let pids: string | null = null;
  let unified: string | null = null;
  try {
    for (const line of fs.readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, controllers, where] = line.split(':');
      if (where === undefined) {
        continue;
      }
      if (controllers.split(',').includes('pids')) {
        pids = where;
      } else if (controllers === '') {
        unified = where;
      }
    }
  } catch {
    // not Linux
  }
  return { pids, unified };
}

/** A directory this process can make children in, as the place of its runs' cgroups; null with why not. */
function cgroupRoot(): { root: string | null; why: string } {
  const { pids, unified } = ownCgroups();
  const candidates: string[] = [];
  if (pids !== null) {
    candidates.push(path.join('/sys/fs/cgroup/pids', pids));
  }
  if (unified !== null) {
    // Pure v2 at /sys/fs/cgroup, or the hybrid layout's /sys/fs/cgroup/unified.
    for (const mount of ['/sys/fs/cgroup', '/sys/fs/cgroup/unified']) {
      if (fs.existsSync(path.join(mount, 'cgroup.controllers'))) {
        candidates.push(path.join(mount, unified));
      }
    }
  }
  const why: string[] = [];
  for (const dir of candidates) {
    sweepStaleRoots(dir);
    const root = path.join(dir, `agent-manager-${process.pid}`);
    try {
      fs.mkdirSync(root);
      if (fs.existsSync(path.join(root, 'pids.max'))) {
        return { root, why: '' };
      }
      // v2: the pids controller must be handed down to the runs' cgroups.
      fs.writeFileSync(path.join(root, 'cgroup.subtree_control'), '+pids');
      return { root, why: '' };
    } catch (err) {
      why.push(`${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      try {
        fs.rmdirSync(root);
      } catch {
        // never made
      }
    }
  }
  return { root: null, why: why.length > 0 ? why.join('; ') : 'no pids cgroup found' };
}

/**
 * How runs' processes are capped on this machine: a pids cgroup root of this manager's (kept for
 * its runs, or, for `doctor`, which runs without a manager, removed again at once), else
 * RLIMIT_NPROC through `prlimit`, else nothing, with why.
 */
export function probeProcessCap(searchPath: string, cwd: string, keep = false): ProcessCapMechanism {
  if (process.platform !== 'linux') {
    return { kind: 'none', reason: `process limits need Linux; this is ${process.platform}` };
  }
  const { root, why } = cgroupRoot();
  if (root !== null) {
    if (!keep) {
      removeCgroupTree(root);
    }
    return { kind: 'cgroup', root };
  }
  if (process.getuid?.() === 0) {
    return { kind: 'none', reason: `no pids cgroup could be made (${why}), and an rlimit does not bind root` };
  }
  const prlimit = findExecutable('prlimit', searchPath, cwd);
  return prlimit === null
    ? { kind: 'none', reason: `no pids cgroup could be made (${why}), and prlimit (util-linux) is not installed` }
    : { kind: 'rlimit', prlimit };
}

@Injectable()
export class RunLimits implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RunLimits.name);
  private state: ProcessCapMechanism = { kind: 'none', reason: 'not probed yet' };

  constructor(
    private readonly configuration: ConfigurationService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

  get mechanism(): ProcessCapMechanism {
    return this.state;
  }

  onModuleInit(): void {
    this.state = probeProcessCap(process.env.PATH ?? '', this.runtime.paths.root, true);
    this.logger.log(
      this.state.kind === 'none'
        ? `agent runs' processes are not capped: ${this.state.reason}`
        : `agent runs' processes are capped by ${this.state.kind === 'cgroup' ? `a pids cgroup each (${this.state.root})` : 'RLIMIT_NPROC in each sandbox'}`,
    );
  }

  /** The runs' cgroups go with the manager (each is empty by then: its run ended). */
  onApplicationShutdown(): void {
    if (this.state.kind === 'cgroup') {
      removeCgroupTree(this.state.root);
    }
  }

  values(): RunLimitValues {
    return {
      processes: this.configuration.get('agentProcessLimit'),
      shmBytes: this.configuration.get('agentShmSizeMb') * MB,
      tmpBytes: this.configuration.get('agentTmpSizeMb') * MB,
    };
  }

  /** The caps of one run (its cgroup made now, with its limit). */
  open(marker: string): RunCaps {
    const values = this.values();
    if (this.state.kind === 'cgroup') {
      const dir = path.join(this.state.root, marker.replace(/[^A-Za-z0-9_-]/g, '_'));
      try {
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, 'pids.max'), String(values.processes));
        return { cgroupProcs: path.join(dir, 'cgroup.procs'), prlimit: null, values };
      } catch (err) {
        this.logger.warn(
          `could not make the pids cgroup of ${marker}: ${(err as Error).message}; its processes are not capped`,
        );
      }
    }
    return { cgroupProcs: null, prlimit: this.state.kind === 'rlimit' ? this.state.prlimit : null, values };
  }

  /** Whether the run hit its process limit (a fork was refused), as the kernel counted; null when it did not or cannot say. */
  processLimitHit(caps: RunCaps): string | null {
    if (caps.cgroupProcs === null) {
      return null;
    }
    try {
      const events = fs.readFileSync(path.join(path.dirname(caps.cgroupProcs), 'pids.events'), 'utf8');
      const max = Number(/^max (\d+)/m.exec(events)?.[1] ?? '0');
      return max > 0
        ? `it tried to run more than ${caps.values.processes} processes at once (agentProcessLimit); ${max} process starts were refused`
        : null;
    } catch {
      return null;
    }
  }

  /**
   * Watches a running run for a limit it hit (every 2 s, and once more when asked): `hit` gets the
   * reason once, and the caller fails the run with it. Returns what stops the watch.
   */
  watch(caps: RunCaps, rootPid: number, hit: (reason: string) => void): { check: () => boolean; stop: () => void } {
    let done = false;
    const seen = { pid: null as number | null };
    const check = (): boolean => {
      if (done) {
        return true;
      }
      const reason = this.processLimitHit(caps) ?? temporaryFull(rootPid, caps, seen);
      if (reason !== null) {
        done = true;
        clearInterval(timer);
        hit(reason);
      }
      return done;
    };
    const timer = setInterval(check, WATCH_MS);
    timer.unref();
    return {
      check,
      stop: () => {
        done = true;
        clearInterval(timer);
      },
    };
  }

  /**
   * The run's cgroup goes once its processes have (what is left in it is killed first). A killed
   * process takes a moment to leave its cgroup, more on a loaded machine: tried again every 100 ms
   * for up to 10 s, so a long-lived manager does not collect empty cgroups. Resolves when it is
   * gone (or left to the next start's sweep).
   */
  async close(caps: RunCaps): Promise<void> {
    if (caps.cgroupProcs === null) {
      return;
    }
    const dir = path.dirname(caps.cgroupProcs);
    for (let attempt = 0; attempt < 100 && removeCgroupTree(dir) === 'busy'; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100).unref());
    }
  }
}

/** The runs' cgroups of managers that are gone (killed): their leftovers are ended with them. */
function sweepStaleRoots(dir: string): void {
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^agent-manager-(\d+)$/.exec(name)?.[1] ?? '0');
    if (pid > 0 && pid !== process.pid && !alive(pid)) {
      removeCgroupTree(path.join(dir, name));
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes a cgroup and those below it, killing what is left in each first (a cgroup with processes cannot go). */
function removeCgroupTree(dir: string): 'gone' | 'busy' {
  let entries: fs.Dirent[] = [];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 'gone';
  }
  for (const entry of entries) {
    if (entry.isDirectory()) {
      removeCgroupTree(path.join(dir, entry.name));
    }
  }
  try {
    for (const pid of fs
      .readFileSync(path.join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone
      }
    }
    fs.rmdirSync(dir);
    return 'gone';
  } catch (err) {
    // Still busy (a process exiting): the caller may try again; else the next start's sweep removes it.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'gone' : 'busy';
  }
}
