import { spawn } from 'node:child_process';
import * as fs from 'node:fs';

import type { AgentIsolation } from '@libs/contracts';

import { findExecutable } from './executable';
import { bubblewrapOptions, seatbeltProfile } from './sandbox-arguments';
import { SANDBOX_RELAY, SandboxLayout } from './sandbox-layout';

// Whether this machine can sandbox at all, asked once at start and by `doctor`: a real sandboxed
// process, and a network namespace with its relay.

type Mechanism = NonNullable<AgentIsolation['mechanism']> | null;

const PROBE_TIMEOUT_MS = 10_000;

/**
 * Why bubblewrap (`program`) cannot give a run a network namespace of its own here, or null when
 * it can: the relay is built and a namespace starts. The manager asks once; `doctor` asks too.
 */
export async function probeNetworkNamespace(program: string): Promise<string | null> {
  if (!fs.existsSync(SANDBOX_RELAY)) {
    return `the network relay is not built (${SANDBOX_RELAY}); run npm run build`;
  }
  // Node itself as the command: it is there whatever PATH the caller has (doctor's may be bare).
  const result = await run(program, [
    '--unshare-net',
    '--ro-bind',
    '/',
    '/',
    '--dev-bind',
    '/dev',
    '/dev',
    '--',
    process.execPath,
    '-e',
    '',
  ]);
  if (result.code === 0) {
    return null;
  }
  const said = result.error ?? (result.stderr.trim().split('\n')[0] || `exit ${result.code}`);
  return `bubblewrap cannot make a network namespace here (${said}); user namespaces may be restricted`;
}

export interface SandboxProbe {
  mode: 'auto' | 'off';
  searchPath: string;
  cwd: string;
  hidden: string[];
  /** An existing file inside `hidden`: the sandbox must start and must not show it. */
  witness: string;
}

/**
 * Whether agents can be isolated here: bubblewrap (Linux) or sandbox-exec (macOS) found, and a
 * sandbox with the options runs use starts and hides `witness`. The manager probes once at start;
 * `doctor` probes the same way on a temporary tree.
 */
export async function probeSandbox(
  probe: SandboxProbe,
): Promise<{ isolation: AgentIsolation; program: string | null }> {
  const off = (reason: string) => ({
    isolation: { enabled: false, mechanism: null, reason } satisfies AgentIsolation,
    program: null,
  });
  if (probe.mode === 'off') {
    return off('agentIsolation is "off" in the configuration');
  }
  const layout: SandboxLayout = {
    concealed: [],
    cwd: probe.cwd,
    hidden: probe.hidden,
    protectedRoots: [],
    readOnly: [],
    readOnlyFiles: [],
    temporary: null,
    writable: [probe.cwd],
  };
  let mechanism: Mechanism;
  let program: string | null;
  let args: string[];
  if (process.platform === 'linux') {
    mechanism = 'bubblewrap';
    program = findExecutable('bwrap', probe.searchPath, probe.cwd);
    if (program === null) {
      return off(
        'bubblewrap (`bwrap`) is not installed; install the bubblewrap package (for example apt-get install bubblewrap)',
      );
    }
    args = [...bubblewrapOptions(layout), '--', 'test', '!', '-e', probe.witness];
  } else if (process.platform === 'darwin') {
    mechanism = 'seatbelt';
    program = fs.existsSync('/usr/bin/sandbox-exec') ? '/usr/bin/sandbox-exec' : null;
    if (program === null) {
      return off('sandbox-exec (Seatbelt) is not available on this Mac');
    }
    args = ['-p', seatbeltProfile(layout), '/bin/test', '!', '-r', probe.witness];
  } else {
    return off(`agent isolation needs Linux (bubblewrap) or macOS (Seatbelt); this is ${process.platform}`);
  }
  const result = await run(program, args);
  if (result.code === 0) {
    return { isolation: { enabled: true, mechanism, reason: null }, program };
  }
  const name = mechanism === 'bubblewrap' ? 'bubblewrap' : 'sandbox-exec';
  if (result.error) {
    return off(`${name} could not be run: ${result.error}`);
  }
  const said = result.stderr.trim().split('\n')[0];
  return said
    ? off(
        `${name} cannot create the sandbox here (${said})${mechanism === 'bubblewrap' ? '; user namespaces may be disabled or restricted' : ''}`,
      )
    : off(`${name} started but did not hide ${probe.witness}`);
}

function run(command: string, args: string[]): Promise<{ code: number | null; stderr: string; error: string | null }> {
  return new Promise((resolve) => {
    let stderr = '';
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), PROBE_TIMEOUT_MS);
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4096)));
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, error: err.message, stderr });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, error: signal === 'SIGKILL' ? `no answer within ${PROBE_TIMEOUT_MS / 1000} s` : null, stderr });
    });
  });
}
