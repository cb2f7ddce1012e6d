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
