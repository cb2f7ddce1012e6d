import * as fs from 'node:fs';

// Linux process facts from /proc, for the workspace lock and for ending agent process trees.

export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  /** Kernel start time (clock ticks since boot): with the pid, identifies a process for good. */
  startTime: string;
  /** `Z` for a zombie: dead, waiting to be reaped. */
  state: string;
}

/** Fields of /proc/<pid>/stat; null when the process is gone. */
export function processInfo(pid: number): ProcessInfo | null {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    pgid: Number(fields[2]),
    pid,
    ppid: Number(fields[1]),
    startTime: fields[19] ?? '',
    state: fields[0] ?? '',
  };
}

export function processStartTime(pid: number): string | null {
  return processInfo(pid)?.startTime ?? null;
}

/** True while the process exists and is not a zombie. */
export function isRunning(pid: number): boolean {
  const info = processInfo(pid);
  return info !== null && info.state !== 'Z' && info.state !== 'X';
}

export function allPids(): number[] {
  return fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

/** The value of `name` in the process's environment; null when it has none or it cannot be read. */
export function environValue(pid: number, name: string): string | null {
  try {
    for (const entry of fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
      if (entry.startsWith(`${name}=`)) {
        return entry.slice(name.length + 1);
      }
    }
  } catch {
    // gone, or another user's
  }
  return null;
}

/** Whether the process's environment holds exactly `entry` (`NAME=value`). Unreadable → false. */
export function environHas(pid: number, entry: string): boolean {
  try {
    const environ = fs.readFileSync(`/proc/${pid}/environ`);
    const needle = Buffer.from(`${entry}\0`);
    return environ.indexOf(needle) === 0 || environ.indexOf(Buffer.concat([Buffer.from('\0'), needle])) >= 0;
  } catch {
    return false;
  }
}
