import { execFile } from 'node:child_process';

// How the checks run a program (bounded in time, never through a shell) and compare versions.

interface Exec {
  code: number | null;
  stdout: string;
  stderr: string;
  error: string | null;
}

export function exec(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  timeoutMs: number,
): Promise<Exec> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd, encoding: 'utf8', env, maxBuffer: 256 * 1024, timeout: timeoutMs, windowsHide: true },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({
          code,
          error:
            error && code === null ? (error.killed ? `no answer within ${timeoutMs / 1000} s` : error.message) : null,
          stderr,
          stdout,
        });
      },
    );
  });
}

export function versionAtLeast(version: string, minimum: string): boolean {
  const a = version.replace(/^v/, '').split('.').map(Number);
  const b = minimum.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) {
      return (a[i] ?? 0) > (b[i] ?? 0);
    }
  }
  return true;
}
