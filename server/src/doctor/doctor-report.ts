import type { ConfigurationValues } from '@libs/contracts';

// What `agent-manager doctor` and GET /api/doctor answer: the report's shape and its text form.

/** ok: fine; warn: works, with less (no isolation, no GitHub); fail: what it names does not work. */
export type DoctorStatus = 'ok' | 'warn' | 'fail';

export interface DoctorCheck {
  id:
    | 'node'
    | 'git'
    | 'codex'
    | 'claude'
    | 'github'
    | 'isolation'
    | 'network'
    | 'environment'
    | 'worktrees'
    | 'port'
    | 'dataDirectory'
    | 'database';
  title: string;
  status: DoctorStatus;
  /** A failure of a required check makes `doctor` exit non-zero. */
  required: boolean;
  detail: string;
  /** How to fix it; null when there is nothing to fix. */
  fix: string | null;
  /** For an agent CLI: installed or not (a logged-out CLI is installed). */
  installed?: boolean;
  /**
   * What was found, as a stable code (`git.no_commit`) with the values `detail` and `fix` name
   * (paths, versions, the CLI's own error text): the dashboard writes them in the reader's
   * language (issue 26 §13); `detail` and `fix` stay English for the terminal and older clients.
   */
  code: string;
  args: DoctorArgs;
}

export type DoctorArgs = Record<string, string | number | boolean | null>;

export interface DoctorReport {
  /** False when a required check failed. */
  ok: boolean;
  checks: DoctorCheck[];
}

export interface DoctorOptions {
  workspace: string;
  env?: NodeJS.ProcessEnv;
  /** Launch overrides (`--port`, `--host`), as `start` would apply them. */
  overrides?: Partial<ConfigurationValues>;
  /** Each external command gets this long. */
  timeoutMs?: number;
  /**
   * The URL of the manager asking (GET /api/doctor): its own port is in use by itself, and its
   * store is open, so those two are reported as they are instead of probed.
   */
  serving?: string;
}

/** The report for a terminal: one line per check, the fix indented under a miss. */
export function formatDoctorReport(report: DoctorReport): string {
  const mark: Record<DoctorStatus, string> = { fail: '✗', ok: '✓', warn: '!' };
  const lines = report.checks.flatMap((c) => [
    `${mark[c.status]} ${c.title.padEnd(17)}${c.detail}`,
    ...(c.fix ? [`  ${' '.repeat(17)}→ ${c.fix}`] : []),
  ]);
  const failed = report.checks.filter((c) => c.required && c.status === 'fail').length;
  lines.push(
    '',
    report.ok
      ? 'Ready: `agent-manager` starts Agent Manager here.'
      : `${failed} required check${failed === 1 ? '' : 's'} failed.`,
  );
  return `${lines.join('\n')}\n`;
}
