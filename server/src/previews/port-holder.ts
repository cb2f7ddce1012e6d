import * as fs from 'node:fs';

import { allPids } from '../core/process-table';

/** Sockets scanned at most (a busy machine's tables), and processes whose descriptors are read. */
const SOCKET_LINES_MAX = 20_000;
const PROCESSES_MAX = 5_000;

/**
 * Which process listens on a TCP port of this machine, where the OS tells (Linux, a process of the
 * same user): "python3 (pid 1234)", or null. For a preview's "port taken" answer (issue 48).
 */
export function portHolder(port: number): string | null {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let lines: string[];
    try {
      lines = fs.readFileSync(table, 'utf8').split('\n').slice(1, SOCKET_LINES_MAX);
    } catch {
      continue;
    }
    for (const line of lines) {
      const fields = line.trim().split(/\s+/);
      // local_address is HEXIP:HEXPORT; state 0A is LISTEN; the inode is the tenth field.
      const local = fields[1]?.split(':');
      if (fields[3] === '0A' && local && parseInt(local[local.length - 1], 16) === port && fields[9] !== '0') {
        inodes.add(fields[9]);
      }
    }
  }
  if (inodes.size === 0) {
    return null;
  }
  for (const pid of allPids().slice(0, PROCESSES_MAX)) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode !== undefined && inodes.has(inode)) {
        return `${processName(pid)} (pid ${pid})`;
      }
    }
  }
  return 'another program';
}

function processName(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() || 'a process';
  } catch {
    return 'a process';
  }
}
