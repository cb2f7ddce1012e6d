import { createHash } from 'node:crypto';

import { allPids, environHas, environValue, isRunning, processInfo } from '../core/process-table';

/** Set in every agent process's environment; every descendant inherits it unless it scrubs it. */
export const RUN_MARKER_VARIABLE = 'AGENT_MANAGER_RUN_MARKER';

const GRACE_MS = 2000;
const POLL_MS = 50;

/**
 * Every living process of a run: those carrying its marker in their environment, plus the
 * descendants of `rootPid` (in case a tool scrubbed its environment). Both CLIs start tool
 * commands in a new session/process group, and Codex leaves a dead command's children
 * behind, so neither the process group nor the parent chain alone finds them all.
 */
export function findRunProcesses(marker: string, rootPid: number | null): number[] {
  const entry = `${RUN_MARKER_VARIABLE}=${marker}`;
  const pids = allPids().filter((pid) => pid !== process.pid);
  const found = new Set<number>();
  const children = new Map<number, number[]>();
  for (const pid of pids) {
    const info = processInfo(pid);
    if (!info || info.state === 'Z') {
      continue;
    }
    children.set(info.ppid, [...(children.get(info.ppid) ?? []), pid]);
    if (environHas(pid, entry)) {
      found.add(pid);
    }
  }
  const stack = rootPid !== null && isRunning(rootPid) ? [rootPid] : [];
  for (const pid of found) {
    stack.push(pid);
  }
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    found.add(pid);
    for (const child of children.get(pid) ?? []) {
      if (!found.has(child)) {
        stack.push(child);
      }
    }
  }
  return [...found];
}

/**
 * The start of the markers of one workspace's long-lived processes of a kind (`preview`,
 * `terminal`): what a manager killed outright left is found by it at the next start, and another
 * workspace's are not.
 */
export function workspaceMarkerPrefix(kind: string, home: string, root: string): string {
  return `${kind}-${createHash('sha256').update(`${home}\0${root}`).digest('hex').slice(0, 16)}-`;
}

/** Ends every process whose marker starts with `prefix`; resolves with how many markers there were. */
export async function endMarkedWith(prefix: string): Promise<number> {
  const markers = markersStartingWith(prefix);
  await Promise.all(markers.map((marker) => killRunTree(marker, null).catch(() => undefined)));
  return markers.length;
}

/** The distinct run markers starting with `prefix` that living processes carry (a startup sweep's list). */
export function markersStartingWith(prefix: string): string[] {
  const found = new Set<string>();
  for (const pid of allPids()) {
    if (pid === process.pid) {
      continue;
    }
    const marker = environValue(pid, RUN_MARKER_VARIABLE);
    if (marker !== null && marker.startsWith(prefix)) {
      found.add(marker);
    }
  }
  return [...found];
}

function signal(pids: number[], sig: NodeJS.Signals): void {
  const ownGroup = processInfo(process.pid)?.pgid;
  const groups = new Set<number>();
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
    const pgid = processInfo(pid)?.pgid;
    if (pgid && pgid !== ownGroup && pgid > 1) {
      groups.add(pgid);
    }
  }
  for (const pgid of groups) {
    try {
      process.kill(-pgid, sig);
    } catch {
      // group already empty
    }
  }
}

/**
 * Ends every process of a run: SIGTERM (to each process and its group), then SIGKILL after
 * 2 s for whatever is left or was started meanwhile. Resolves once none is running.
 */
export async function killRunTree(marker: string, rootPid: number | null, graceMs = GRACE_MS): Promise<void> {
  let pids = findRunProcesses(marker, rootPid);
  if (pids.length === 0) {
    return;
  }
  signal(pids, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    pids = findRunProcesses(marker, rootPid);
    if (pids.length === 0) {
      return;
    }
  }
  for (let round = 0; round < 20; round++) {
    signal(pids, 'SIGKILL');
    await new Promise((r) => setTimeout(r, POLL_MS));
    pids = findRunProcesses(marker, rootPid);
    if (pids.length === 0) {
      return;
    }
  }
  throw new Error(`processes of run ${marker} survived SIGKILL: ${pids.join(', ')}`);
}

/**
 * The last resort of a forced exit (a second Ctrl+C): SIGKILL, now, every descendant of this
 * process and their process groups. A tool command that escaped to another parent is found by
 * its run's marker at the next start (the startup reconciliation).
 */
export function killDescendantsNow(): void {
  const children = new Map<number, number[]>();
  for (const pid of allPids()) {
    const info = processInfo(pid);
    if (info && info.state !== 'Z') {
      children.set(info.ppid, [...(children.get(info.ppid) ?? []), pid]);
    }
  }
  const found: number[] = [];
  const stack = [...(children.get(process.pid) ?? [])];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    found.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  signal(found, 'SIGKILL');
}
