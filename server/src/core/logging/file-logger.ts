import * as path from 'node:path';

import type { LoggerService } from '@nestjs/common';
import * as winston from 'winston';
import DailyRotateFile from 'winston-daily-rotate-file';

import type { LogLevel } from '@libs/contracts';

export interface FileLoggerOptions {
  filePath: string;
  level: LogLevel;
  /** Size at which the file rotates, e.g. `20m`. */
  maxSize: string;
  /** How many files, or how many days (`14d`), to keep. */
  maxFiles: string;
}

// Nest's levels mapped onto winston's npm levels; Nest's `verbose` and `fatal` fold into ours.
const NEST_TO_WINSTON: Record<string, LogLevel> = {
  debug: 'debug',
  error: 'error',
  fatal: 'error',
  log: 'info',
  verbose: 'debug',
  warn: 'warn',
};

/** How long `close` waits for the file to finish before the process goes on without it. */
const CLOSE_BOUND_MS = 10_000;

/**
 * Structured JSON lines in a file rotated by size and by day (winston-daily-rotate-file).
 * The terminal gets nothing from here: the launcher prints one banner and that is all.
 * Callers pass facts (IDs, counts, codes), never prompts, message bodies or tokens.
 */
export class FileLogger implements LoggerService {
  private readonly logger: winston.Logger;
  private readonly transport: DailyRotateFile;
  private closed = false;

  constructor(readonly options: FileLoggerOptions) {
    const parsed = path.parse(options.filePath);
    this.transport = new DailyRotateFile({
      auditFile: path.join(parsed.dir, '.audit.json'),
      createSymlink: true,
      datePattern: 'YYYY-MM-DD',
      dirname: parsed.dir,
      filename: `${parsed.name}-%DATE%${parsed.ext || '.log'}`,
      maxFiles: options.maxFiles,
      maxSize: options.maxSize,
      symlinkName: parsed.base,
    });
    // Nothing else listens for the file stream's errors (a full disk, a removed folder): unheard, one
    // would end the process. Said once on stderr instead; lines go on to be attempted.
    let told = false;
    this.fileStream()?.on('error', (err: Error) => {
      if (!told) {
        told = true;
        process.stderr.write(
          `${JSON.stringify({ level: 'error', message: `the log file cannot be written: ${err.message}` })}\n`,
        );
      }
    });
    this.logger = winston.createLogger({
      format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
      level: options.level,
      transports: [this.transport],
    });
  }

  setLevel(level: LogLevel): void {
    this.logger.level = level;
  }

  get level(): LogLevel {
    return this.logger.level as LogLevel;
  }

  log(message: unknown, ...rest: unknown[]): void {
    this.write('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, rest);
  }

  /**
   * Flushes and closes the file; resolves once everything written so far is on disk. The bound is
   * a last resort for a file that never finishes: on a busy disk opening the day's file took
   * over a second once (a CI run), and a close that gave up then left the open to fail later.
   */
  close(): Promise<void> {
    this.closed = true;
    return new Promise((resolve) => {
      // The transport says 'finish' twice: once its own writes are handed to the file stream (which
      // may not have opened its file yet), and again when that stream has ended. Done means the file
      // stream closed: before that a caller removing the folder made the pending open fail.
      const file = this.fileStream();
      if (file) {
        file.once('close', () => resolve());
      } else {
        this.transport.once('finish', () => resolve());
      }
      this.logger.end();
      setTimeout(resolve, CLOSE_BOUND_MS).unref();
    });
  }

  /** The rotating file stream under the transport (file-stream-rotator's), when there is one. */
  private fileStream(): NodeJS.EventEmitter | null {
    const stream = (this.transport as unknown as { logStream?: NodeJS.EventEmitter }).logStream;
    return stream && typeof stream.once === 'function' ? stream : null;
  }

  private write(nestLevel: string, message: unknown, rest: unknown[]): void {
    if (this.closed) {
      // Something finishing after the close (a timer's last callback): writing to the ended
      // stream would throw out of the logger. One line on stderr keeps it, and nothing breaks.
      process.stderr.write(
        `${JSON.stringify({ level: NEST_TO_WINSTON[nestLevel] ?? 'info', message: message instanceof Error ? message.message : message, note: 'logged after the log closed' })}\n`,
      );
      return;
    }
    const level = NEST_TO_WINSTON[nestLevel] ?? 'info';
    if (!this.logger.isLevelEnabled(level)) {
      // The file would drop it, but only after winston built, timestamped and serialised the
      // entry (a reply's 'message delivered' at --log-level warn: 3 % of the manager's CPU).
      return;
    }
    // Nest passes the context as the last string argument and, for errors, a stack before it.
    const args = [...rest];
    const context = typeof args[args.length - 1] === 'string' ? (args.pop() as string) : undefined;
    const entry: Record<string, unknown> = { context };
    if (level === 'error' && typeof args[0] === 'string') {
      entry.stack = args.shift();
    }
    if (args.length > 0 && typeof args[0] === 'object' && args[0] !== null) {
      Object.assign(entry, args[0]);
    }
    if (typeof message === 'object' && message !== null && !(message instanceof Error)) {
      const { msg, ...fields } = message as Record<string, unknown>;
      this.logger.log(level, String(msg ?? ''), { ...entry, ...fields });
      return;
    }
    const text = message instanceof Error ? message.message : String(message);
    if (message instanceof Error && !entry.stack) {
      entry.stack = message.stack;
    }
    this.logger.log(level, text, entry);
  }
}
