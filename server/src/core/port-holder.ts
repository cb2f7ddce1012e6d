import * as fs from 'node:fs';
import * as path from 'node:path';

import { allPids } from './process-table';
import { runningInstance } from './workspace/instance-lock';

// Who holds a TCP port, for the "port in use" message of `start` and `doctor`. Best effort and
// bounded: Linux's /proc only (elsewhere, and for other users' processes, the pid stays unknown),
// and the Agent Manager home's own lock files, which name any manager of this user and its URL.

export interface PortHolder {
  /** Null when the process could not be found (another user's, or not Linux). */
  pid: number | null;
  /** Its command line, shortened; null when unknown. */
  command: string | null;
  /** Set when the holder is an Agent Manager of this home: its workspace and URL. */
  agentManager: { workspace: string | null; url: string } | null;
}

/** At most this many processes' fd tables are read, so a huge process table cannot stall a start. */
const MAX_PROCESSES = 4096;

/** Inodes of the sockets listening on `port` (any address), from /proc/net/tcp and tcp6. */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; state 0A is LISTEN; field 9 is the inode.
      if (fields.length > 9 && fields[1].endsWith(`:${hexPort}`) && fields[3] === '0A' && fields[9] !== '0') {
        inodes.add(fields[9]);
      }
    }
  }
  return inodes;
}

function pidOfSocket(inodes: Set<string>): number | null {
  if (inodes.size === 0) {
    return null;
  }
  const targets = new Set([...inodes].map((inode) => `socket:[${inode}]`));
  let pids: number[];
  try {
    pids = allPids().slice(0, MAX_PROCESSES);
  } catch {
    return null;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or not ours to read
    }
    for (const fd of fds) {
      try {
        if (targets.has(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))) {
          return pid;
        }
      } catch {
        // closed meanwhile
      }
    }
  }
  return null;
}

function commandLine(pid: number): string | null {
  try {
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    if (args.length === 0) {
      return null;
    }
    const line = args.join(' ');
    return line.length > 120 ? `${line.slice(0, 117)}…` : line;
  } catch {
    return null;
  }
}

/** The live managers of this home, from their workspaces' lock files. */
function managersOfHome(home: string): Array<{ pid: number; url: string | null; workspace: string | null }> {
  const workspaces = path.join(home, 'workspaces');
  let keys: string[];
  try {
    keys = fs.readdirSync(workspaces).filter((key) => /^[0-9a-f]{16}$/.test(key));
  } catch {
    return [];
  }
  return keys.flatMap((key) => {
    const running = runningInstance(path.join(workspaces, key, 'manager.lock'));
    return running ? [running] : [];
  });
}

function portOf(url: string): number | null {
  try {
    const parsed = new URL(url);
    return parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
  } catch {
    return null;
  }
}

/** Who listens on `port`, as far as can be known; null when nothing at all is known. */
export function findPortHolder(port: number, home: string): PortHolder | null {
  const pid = process.platform === 'linux' ? pidOfSocket(listeningInodes(port)) : null;
  const managers = managersOfHome(home);
  const manager = managers.find((m) => m.pid === pid) ?? managers.find((m) => m.url !== null && portOf(m.url) === port);
  if (manager?.url) {
    return {
      agentManager: { url: manager.url, workspace: manager.workspace },
      command: commandLine(manager.pid),
      pid: manager.pid,
    };
  }
  return pid === null ? null : { agentManager: null, command: commandLine(pid), pid };
}

/** One sentence for a person: who holds `host:port` and what to do. */
export function describePortInUse(host: string, port: number, home: string): string {
  const holder = findPortHolder(port, home);
  const fix = 'start with --port <another> (--port 0 picks a free one), or set port in the configuration';
  if (holder?.agentManager) {
    const { url, workspace } = holder.agentManager;
    return `${host}:${port} is in use by another Agent Manager (pid ${holder.pid}${workspace ? `, workspace ${workspace}` : ''}); its dashboard is ${url}/ (\`agent-manager token --workspace ${workspace ?? '<its workspace>'}\` prints its login link). Stop it (\`agent-manager stop --workspace …\`) or ${fix}`;
  }
  if (holder) {
    return `${host}:${port} is in use by pid ${holder.pid}${holder.command ? ` (${holder.command})` : ''}; stop it or ${fix}`;
  }
  return `${host}:${port} is in use by another process (which one could not be found: another user's, or not visible here); ${fix}`;
}
