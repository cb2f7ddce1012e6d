import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import type { AgentSandbox } from '../agents/agent-sandbox';
import { runBounded } from './bounded-process';

export const SETUP_TIMEOUT_MS = 10 * 60 * 1000;
export const TEARDOWN_TIMEOUT_MS = 60 * 1000;
const OUTPUT_MAX_BYTES = 64 * 1024;

export type WorktreeHook = 'setup' | 'teardown';

export interface HookResult {
  /** What ran (for the trace), or null when there is nothing to run. */
  command: string | null;
  ok: boolean;
  output: string;
  /** Why it failed, in one line. */
  failure: string | null;
}

/**
 * The command a hook runs: the configured one (a shell line), else the repository's own
 * `.agent-manager/<hook>` when the worktree has one (run by `sh` whether or not executable).
 */
async function hookCommand(worktree: string, hook: WorktreeHook, configured: string | null): Promise<{ shown: string; args: string[] } | null> {
  if (configured !== null) {
    return { args: ['-c', configured], shown: configured };
  }
  const file = path.join(worktree, '.agent-manager', hook);
  try {
    if ((await fs.stat(file)).isFile()) {
      return { args: [file], shown: `.agent-manager/${hook}` };
    }
  } catch {
    // No such file: nothing to run.
  }
  return null;
}

/**
 * Runs a worktree's setup or teardown command in the worktree, inside the agents' sandbox (the
 * command comes from the repository, which the agent itself may have edited, so it must not see
 * the owner token either), with a time limit and bounded output.
 */
export async function runHook(
  sandbox: AgentSandbox,
  worktree: string,
  cwd: string,
  hook: WorktreeHook,
  configured: string | null,
  env: Record<string, string>,
): Promise<HookResult> {
  const command = await hookCommand(worktree, hook, configured);
  if (command === null) {
    return { command: null, failure: null, ok: true, output: '' };
  }
  const timeoutMs = hook === 'setup' ? SETUP_TIMEOUT_MS : TEARDOWN_TIMEOUT_MS;
  const wrapped = sandbox.wrap('/bin/sh', command.args, { cwd, readOnlyFiles: [] });
  const result = await runBounded(wrapped.command, wrapped.args, {
    cwd,
    env: { ...process.env, ...env },
    keepRunningWhenCut: true,
    maxBytes: OUTPUT_MAX_BYTES,
    mergeOutput: true,
    timeoutMs,
  });
  const output = result.stdout.toString('utf8') + (result.truncated ? '\n[output cut]' : '');
  let failure: string | null = null;
  if (result.error !== null) {
    failure = `could not be started: ${result.error}`;
  } else if (result.timedOut) {
    failure = `did not finish within ${timeoutMs / 1000} s`;
  } else if (result.code !== 0) {
    failure = result.code === null ? `was killed (${result.signal ?? 'signal'})` : `exited with ${result.code}`;
  }
  return { command: command.shown, failure, ok: failure === null, output };
}
