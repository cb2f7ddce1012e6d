import * as fs from 'node:fs';

/** Rotated generations kept beside the live file: daemon.log.1 (newest) … daemon.log.3. */
export const ROTATED_LOGS_KEPT = 3;
const FOLLOW_POLL_MS = 200;

/** `20m`-style sizes, as `logMaxSize` is written in the configuration. */
export function parseLogSize(value: string): number {
  const match = /^(\d+)([kmg]?)$/.exec(value);
  if (!match) {
    throw new Error(`not a size: ${value}`);
  }
  const unit = { '': 1, g: 1024 ** 3, k: 1024, m: 1024 ** 2 }[match[2] as '' | 'k' | 'm' | 'g'];
  return Number(match[1]) * unit;
}

/**
 * The supervisor's log: the manager's stdout and stderr and the supervisor's own lines, appended
 * synchronously (a crash loses nothing already written) and rotated by renaming once the file
 * would pass `maxBytes`, so a manager that writes without end cannot fill the disk.
 */
export class RotatingLog {
  private fd: number;
  private size: number;

  constructor(
    private readonly filePath: string,
    private readonly maxBytes: number,
  ) {
    this.fd = fs.openSync(filePath, 'a', 0o600);
    this.size = fs.fstatSync(this.fd).size;
  }

  write(text: string | Buffer): void {
    const bytes = typeof text === 'string' ? Buffer.from(text) : text;
    if (this.size > 0 && this.size + bytes.length > this.maxBytes) {
      this.rotate();
    }
    try {
      fs.writeSync(this.fd, bytes);
      this.size += bytes.length;
    } catch {
      // A full disk must not take the supervisor (and so the manager's restarts) down with it.
    }
  }

  /** A line of the supervisor's own, told apart from the manager's output. */
  note(message: string): void {
    this.write(`${new Date().toISOString()} [supervisor] ${message}\n`);
  }

  close(): void {
    fs.closeSync(this.fd);
  }

  private rotate(): void {
    fs.closeSync(this.fd);
    for (let generation = ROTATED_LOGS_KEPT - 1; generation >= 1; generation--) {
      fs.rmSync(`${this.filePath}.${generation + 1}`, { force: true });
      if (fs.existsSync(`${this.filePath}.${generation}`)) {
        fs.renameSync(`${this.filePath}.${generation}`, `${this.filePath}.${generation + 1}`);
      }
    }
    fs.renameSync(this.filePath, `${this.filePath}.1`);
    this.fd = fs.openSync(this.filePath, 'a', 0o600);
    this.size = 0;
  }
}

/**
 * The last `lines` lines of the log (0: all of it), the rotated files supplying what the live one
 * lacks; with how many bytes of the live file that covers, where a follow goes on from.
 */
export function tailLog(filePath: string, lines: number): { text: string; liveBytes: number } {
  const files = [filePath, ...Array.from({ length: ROTATED_LOGS_KEPT }, (_, i) => `${filePath}.${i + 1}`)];
  let text = '';
  let liveBytes = 0;
  for (const [index, file] of files.entries()) {
    let content: Buffer;
    try {
      content = fs.readFileSync(file);
    } catch {
      break;
    }
    if (index === 0) {
      liveBytes = content.length;
    }
    text = content.toString('utf8') + text;
    if (lines > 0 && text.split('\n').length > lines + 1) {
      break;
    }
  }
  if (lines === 0 || text === '') {
    return { liveBytes, text };
  }
  const all = (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
  return { liveBytes, text: `${all.slice(-lines).join('\n')}\n` };
}

/**
 * Writes what is appended to the log from `position` on, until `signal` aborts. A rotation (the
 * path now names a new file, or a shorter one) is followed: the rest of the old file first, then
 * the new one from its start.
 */
export async function followLog(
  filePath: string,
  position: number,
  write: (chunk: Buffer) => void,
  signal: AbortSignal,
): Promise<void> {
  let fd: number | null = null;
  let inode = -1;
  let offset = position;
  const drain = () => {
    if (fd === null) {
      return;
    }
    const buffer = Buffer.alloc(64 * 1024);
    for (;;) {
      const read = fs.readSync(fd, buffer, 0, buffer.length, offset);
      if (read === 0) {
        return;
      }
      offset += read;
      write(buffer.subarray(0, read));
    }
  };
  while (!signal.aborted) {
    let stat: fs.Stats | null = null;
    try {
      stat = fs.statSync(filePath);
    } catch {
      // Between the rename and the new file: look again next time.
    }
    if (stat !== null && (stat.ino !== inode || stat.size < offset)) {
      drain();
      if (fd !== null) {
        fs.closeSync(fd);
        offset = 0;
      }
      fd = fs.openSync(filePath, 'r');
      inode = fs.fstatSync(fd).ino;
      if (stat.size < offset) {
        offset = 0;
      }
    }
    drain();
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_POLL_MS));
  }
  if (fd !== null) {
    fs.closeSync(fd);
  }
}
