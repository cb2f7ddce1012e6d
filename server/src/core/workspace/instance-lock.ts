import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';

import { processInfo, processStartTime } from '../process-table';

interface LockRecord {
  pid: number;
  /** Kernel start time of the process (Linux), so a recycled PID is not mistaken for us. */
  startTime: string | null;
  url: string | null;
  startedAt: string;
  /** The workspace it serves, so a start refused a port can say which manager holds it. */
  workspace?: string | null;
}

export class InstanceLockedError extends Error {
  constructor(readonly holder: LockRecord) {
    super(
      `Agent Manager is already running for this workspace (pid ${holder.pid}${holder.url ? `, ${holder.url}` : ', still starting'})`,
    );
  }
}

function isAlive(record: LockRecord): boolean {
  try {
    process.kill(record.pid, 0);
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // kill(pid, 0) also succeeds on a zombie: a manager killed with -9 whose parent never reaps it
  // (a container's init, a supervisor that forgot) is dead all the same.
  const info = processInfo(record.pid);
  if (info === null || info.state === 'Z' || info.state === 'X') {
    return false;
  }
  return record.startTime === null || info.startTime === record.startTime;
}

/**
 * The manager holding this lock, if one is alive (for clients on the same machine: `agent-manager
 * mcp` finds its URL here). Null when there is no lock, it is unreadable, or its process is gone.
 */
export function runningInstance(
  lockPath: string,
): { pid: number; url: string | null; workspace: string | null } | null {
  let record: LockRecord;
  try {
    record = JSON.parse(fs.readFileSync(lockPath, 'utf8')) as LockRecord;
  } catch {
    return null;
  }
  return typeof record.pid === 'number' && isAlive(record)
    ? { pid: record.pid, url: record.url ?? null, workspace: record.workspace ?? null }
    : null;
}

/**
 * One Agent Manager per workspace. The lock file is created exclusively; a lock whose process
 * is gone (kill -9, crash, reboot) is stale and taken over.
 */
export class InstanceLock {
  private held = false;

  constructor(
    private readonly lockPath: string,
    private readonly workspace: string | null = null,
  ) {}

  acquire(): void {
    const record: LockRecord = {
      pid: process.pid,
      startTime: processStartTime(process.pid),
      startedAt: new Date().toISOString(),
      url: null,
      workspace: this.workspace,
    };
    // Written whole to a file of our own, then linked into place: link(2) fails if the lock
    // exists, and the lock never exists half-written. (`writeFileSync(…, {flag: 'wx'})` creates it
    // empty first: a second start reading it in that instant took it for a stale lock and
    // removed it, and both went on holding "the" lock; readers such as `mcp` saw no manager.)
    const draft = `${this.lockPath}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    fs.writeFileSync(draft, JSON.stringify(record), { mode: 0o600 });
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          fs.linkSync(draft, this.lockPath);
          this.held = true;
          return;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
            throw err;
          }
        }
        const holder = this.read();
        if (holder && isAlive(holder)) {
          throw new InstanceLockedError(holder);
        }
        // Stale (its process is gone) or unreadable (corrupt): remove it and race for it again.
        fs.rmSync(this.lockPath, { force: true });
      }
    } finally {
      fs.rmSync(draft, { force: true });
    }
    throw new Error(`could not take the workspace lock ${this.lockPath}`);
  }

  /** Records the listening URL so a second start can say where the first one is. */
  setUrl(url: string): void {
    const record = this.read();
    if (!this.held || !record || record.pid !== process.pid) {
      return;
    }
    const tmp = `${this.lockPath}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ ...record, url }), { mode: 0o600 });
    fs.renameSync(tmp, this.lockPath);
  }

  release(): void {
    if (!this.held) {
      return;
    }
    this.held = false;
    const record = this.read();
    if (record?.pid === process.pid) {
      fs.rmSync(this.lockPath, { force: true });
    }
  }

  private read(): LockRecord | null {
    try {
      return JSON.parse(fs.readFileSync(this.lockPath, 'utf8')) as LockRecord;
    } catch {
      return null;
    }
  }
}
