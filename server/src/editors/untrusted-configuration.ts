import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { git } from '../core/git/git';

/**
 * git settings that make git (an editor's built-in git included) run a program. The manager's own
 * git neutralises them (NEUTRAL_SETTINGS); an editor reads them as written.
 */
const PROGRAM_SETTINGS = [
  /^core\.(fsmonitor|hookspath|sshcommand|editor|pager|askpass|gitproxy|alternaterefscommand)$/,
  /^sequence\.editor$/,
  /^credential\..*helper$/,
  /^diff\.(external|.+\.(command|textconv))$/,
  /^merge\..+\.driver$/,
  /^filter\..+\.(clean|smudge|process)$/,
  /^gpg\.(.+\.)?program$/,
  /^remote\..+\.(uploadpack|receivepack|vcs)$/,
  /^(include|includeif\..+)\.path$/,
  /^alias\..+$/,
];

/** Files editors read on opening a folder that can make them run something (tasks, language servers, environments). */
const EDITOR_FILES = [
  '.vscode/tasks.json',
  '.vscode/settings.json',
  '.zed/settings.json',
  '.zed/tasks.json',
  '.idea',
  '.envrc',
  '.devcontainer',
];

/**
 * What in an agent's working copy would make an editor (or its git) run a program the agent
 * chose, as the person, outside any sandbox: its repository's program settings and hooks, and
 * the editors' own folder settings. Each named once ("git: core.fsmonitor", ".vscode/tasks.json").
 */
export async function programsConfigured(folder: string): Promise<string[]> {
  const found: string[] = [];
  for (const file of EDITOR_FILES) {
    if (
      await fs.lstat(path.join(folder, file)).then(
        () => true,
        () => false,
      )
    ) {
      found.push(file);
    }
  }
  // The manager's git: the agent's repository's settings are read, never acted on.
  const listed = await git(['config', '--local', '--name-only', '--list'], {
    cwd: folder,
    okCodes: [0, 1, 128],
    timeoutMs: 10_000,
  }).catch(() => null);
  const keys = new Set((listed?.stdout ?? '').split('\n').map((key) => key.trim().toLowerCase()));
  for (const key of [...keys].sort()) {
    if (PROGRAM_SETTINGS.some((pattern) => pattern.test(key))) {
      found.push(`git: ${key}`);
    }
  }
  const gitDir = await git(['rev-parse', '--path-format=absolute', '--git-dir'], {
    cwd: folder,
    okCodes: [0, 128],
    timeoutMs: 10_000,
  }).catch(() => null);
  const hooks = gitDir?.code === 0 ? path.join(gitDir.stdout.trim(), 'hooks') : null;
  const installed = hooks ? await fs.readdir(hooks).catch(() => [] as string[]) : [];
  for (const hook of installed.filter((name) => !name.endsWith('.sample')).sort()) {
    found.push(`git hook: ${hook}`);
  }
  return found;
}
