import * as fs from 'node:fs';

/** What a Unix socket's path may hold (sun_path is 108 bytes with its NUL). */
export const SOCKET_PATH_MAX = 107;

/**
 * Whether `file` is a Unix socket itself, not a link to one: a socket in a directory a sandbox
 * may write is dialled by the manager only while it is still the one the sandbox's process made.
 */
export function isSocketFile(file: string): boolean {
  try {
    return fs.lstatSync(file).isSocket();
  } catch {
    return false;
  }
}
