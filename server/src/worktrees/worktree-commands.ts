import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import type { AgentSandbox } from '../agents/agent-sandbox';
import type { SandboxGit, SandboxNetwork } from '../agents/sandbox-layout';
import type { RunCaps } from '../agents/run-limits';
import { RUN_MARKER_VARIABLE, killRunTree } from '../agents/process-tree';
import { agentVariables } from '../agents/agent-variables';
import { runBounded } from '../core/process/bounded-process';

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
async function hookCommand(
  worktree: string,
  hook: WorktreeHook,
  configured: string | null,
  personCheckout: string | null,
): Promise<{ shown: string; args: string[]; personal: boolean } | null> {
  if (configured !== null) {
    return { args: ['-c', configured], personal: true, shown: configured };
  }
  const file = path.join(worktree, '.agent-manager', hook);
  try {
    if ((await fs.stat(file)).isFile()) {
      return { args: [file], personal: await sameFile(file, personCheckout, hook), shown: `.agent-manager/${hook}` };
    }
  } catch {
    // No such file: nothing to run.
  }
  return null;
}

/** Whether the worktree's hook file is, byte for byte, the person's checkout's own (not one an agent wrote). */
async function sameFile(file: string, personCheckout: string | null, hook: WorktreeHook): Promise<boolean> {
  if (personCheckout === null) {
    return false;
  }
  const [mine, theirs] = await Promise.all([
    fs.readFile(file).catch(() => null),
    fs.readFile(path.join(personCheckout, '.agent-manager', hook)).catch(() => null),
  ]);
  return mine !== null && theirs !== null && mine.equals(theirs);
}

/** Where and as what a hook runs. */
export interface HookContext {
  /** The worktree's top (what the hook may write) and its working directory inside it. */
  worktree: string;
  cwd: string;
  /** What of git the sandbox must know (the agent's own repository, or the person's in place), or null. */
  git: SandboxGit | null;
  /** The run's private temporary directory, or null (teardown). */
  tmp: string | null;
  /** The run's limits (a setup counts as its run), or null (teardown). */
  caps: RunCaps | null;
  /** The run marker (a run's id for setup): every process of the hook carries it, so a stop, the shutdown and the startup sweep find them. */
  marker: string;
  /** Aborted by a stop, steer, cancel or shutdown: the hook's processes are ended at once. */
  signal?: AbortSignal;
  /** AGENT_MANAGER_* and git LFS variables. */
  env: Record<string, string>;
  /** The manager's variables the person lets agents see besides the usual ones (`agentEnvironmentPass`). */
  pass: readonly string[];
  /**
   * The configured secrets, by name (issue 45): given only to a command the person wrote (the
   * configured one, or a hook file identical to their checkout's) running in a worktree that holds
   * nothing an agent wrote (`untouched`), since a command runs the files around it too.
   */
  secrets: Record<string, string>;
  /**
   * Whether the worktree is as the person's base made it: no agent has had it yet (a first setup
   * at the base commit). Asked only when a command runs: it reads every file's status.
   */
  untouched: () => Promise<boolean>;
  /** The person's checkout, whose `.agent-manager/<hook>` a worktree's must equal to get the secrets; null: none. */
  personCheckout: string | null;
  /** The run's network and the variables that point at its proxy; absent (teardown): none at all, unless the mode is open. */
  network?: { sandbox: SandboxNetwork; env: Record<string, string> };
}

/**
 * Runs a worktree's setup or teardown command in the worktree, inside the agents' sandbox and
 * with their scrubbed environment (the command comes from the repository, which the agent itself
 * may have edited, so it must reach no more than the agent does), with a time limit and bounded
 * output. Its processes carry `marker`: when the signal aborts, or the command ends, whatever it
 * started is ended too (as bubblewrap's PID namespace would).
 */
export async function runHook(
  sandbox: AgentSandbox,
  hook: WorktreeHook,
  configured: string | null,
  context: HookContext,
): Promise<HookResult> {
  const command = await hookCommand(context.worktree, hook, configured, context.personCheckout);
  if (command === null) {
    return { command: null, failure: null, ok: true, output: '' };
  }
  const timeoutMs = hook === 'setup' ? SETUP_TIMEOUT_MS : TEARDOWN_TIMEOUT_MS;
  const untouched = command.personal && (await context.untouched());
  const env: Record<string, string> = {
    ...agentVariables(process.env, context.pass, null, Object.keys(context.secrets)),
    ...context.env,
    ...context.network?.env,
    ...(untouched ? context.secrets : {}),
    [RUN_MARKER_VARIABLE]: context.marker,
  };
  if (context.tmp !== null) {
    env.TMPDIR = context.tmp;
  }
  if (context.signal?.aborted) {
    return { command: command.shown, failure: 'was stopped before it started', ok: false, output: '' };
  }
  const wrapped = sandbox.wrap('/bin/sh', command.args, {
    caps: context.caps,
    cwd: context.cwd,
    env,
    git: context.git,
    network: context.network?.sandbox ?? { kind: 'none' },
    provider: null,
    readOnlyFiles: [],
    tmp: context.tmp,
    workTree: context.worktree,
  });
  let stopped = false;
  const stop = () => {
    stopped = true;
    void killRunTree(context.marker, null).catch(() => undefined);
  };
  context.signal?.addEventListener('abort', stop, { once: true });
  let result: Awaited<ReturnType<typeof runBounded>>;
  try {
    result = await runBounded(wrapped.command, wrapped.args, {
      cwd: context.cwd,
      env,
      keepRunningWhenCut: true,
      maxBytes: OUTPUT_MAX_BYTES,
      mergeOutput: true,
      timeoutMs,
    });
  } finally {
    context.signal?.removeEventListener('abort', stop);
  }
  // What it left running (a daemon it started, a tool in another process group) ends with it.
  await killRunTree(context.marker, null).catch(() => undefined);
  const withheld =
    Object.keys(context.secrets).length === 0 || untouched
      ? ''
      : command.personal
        ? `\n[secrets withheld: an agent has had this worktree, and ${command.shown} runs what is in it]`
        : `\n[secrets withheld: ${command.shown} is not your checkout's own, so an agent may have written it]`;
  const output = result.stdout.toString('utf8') + (result.truncated ? '\n[output cut]' : '') + withheld;
  let failure: string | null = null;
  if (stopped) {
    failure = 'was stopped';
  } else if (result.error !== null) {
    failure = `could not be started: ${result.error}`;
  } else if (result.timedOut) {
    failure = `did not finish within ${timeoutMs / 1000} s`;
  } else if (result.code !== 0) {
    failure = result.code === null ? `was killed (${result.signal ?? 'signal'})` : `exited with ${result.code}`;
  }
  return { command: command.shown, failure, ok: failure === null, output };
}
