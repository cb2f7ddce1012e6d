import * as fs from 'node:fs';

/** Resident memory of a process in MB (VmRSS in /proc/<pid>/status; Linux). */
export function residentMb(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match?.[1] ? Number(match[1]) / 1024 : NaN;
}

/** Open file descriptors of a process (entries of /proc/<pid>/fd; Linux). */
export function openFds(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

/** Samples `read` every `everyMs` until stopped; returns the samples' maximum. */
export function sampleMax(read: () => number, everyMs = 100): { stop(): number } {
  let max = read();
  const timer = setInterval(() => (max = Math.max(max, read())), everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(max, read());
    },
  };
}

/** The command lines of a process's descendants, read from /proc (Linux); processes gone meanwhile are left out. */
export function descendantCommandLines(root: number): string[][] {
  const parents = new Map<number, number>();
  const argvs = new Map<number, string[]>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) {
      continue;
    }
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      argvs.set(Number(name), fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter(Boolean));
    } catch {
      // gone meanwhile
    }
  }
  const isDescendant = (pid: number): boolean => {
    for (let at = parents.get(pid); at !== undefined && at > 1; at = parents.get(at)) {
      if (at === root) {
        return true;
      }
    }
    return false;
  };
  return [...argvs].filter(([pid, argv]) => argv.length > 0 && isDescendant(pid)).map(([, argv]) => argv);
}
