import * as fs from 'node:fs';

// Its own module, free of the configuration schema (class-validator, Swagger): the CLI's light
// commands (status, stop, token) write files with it and must not load the whole server to do so.

/** Write-temp, fsync, rename: a crash leaves the old file or the new one, never half of one. */
export function writeAtomically(filePath: string, content: string, mode = 0o600): void {
  const tmp = `${filePath}.${process.pid}.${Date.now()}.tmp`;
  const fd = fs.openSync(tmp, 'w', mode);
  try {
    fs.writeFileSync(fd, content);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.renameSync(tmp, filePath);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}
