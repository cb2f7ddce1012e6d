import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { ConfigurationValues } from '@libs/contracts';

import { probeNetworkNamespace, probeSandbox } from '../agents/sandbox-probe';
import { findExecutable } from '../agents/executable';
import { probeProcessCap } from '../agents/run-limits';
import { secretStates } from '../core/secrets/secrets.service';
import { DoctorArgs, DoctorCheck } from './doctor-report';

// What contains the agents: the sandbox and the run's limits, the network, and the environment they see.

/** The per-run limits as they would apply here (issue 44 §5), in words and as values. */
function describeLimits(
  configuration: ConfigurationValues,
  sandboxed: boolean,
  env: NodeJS.ProcessEnv,
  root: string,
): { text: string; args: DoctorArgs } {
  const cap = probeProcessCap(env.PATH ?? '', root);
  const processes =
    cap.kind === 'cgroup'
      ? `${configuration.agentProcessLimit} processes per run (a pids cgroup each)`
      : cap.kind === 'rlimit'
        ? `${configuration.agentProcessLimit} processes per run (RLIMIT_NPROC in its sandbox)`
        : `processes not capped: ${cap.reason}`;
  const space = sandboxed
    ? `; /tmp, /var/tmp and $TMPDIR ${configuration.agentTmpSizeMb} MB and /dev/shm ${configuration.agentShmSizeMb} MB of each run's own`
    : '';
  return {
    args: {
      processCap: cap.kind,
      processLimit: configuration.agentProcessLimit,
      shmMb: configuration.agentShmSizeMb,
      tmpMb: configuration.agentTmpSizeMb,
    },
    text: `limits: ${processes}${space}`,
  };
}

export async function checkIsolation(
  mode: 'auto' | 'off',
  root: string,
  env: NodeJS.ProcessEnv,
  configuration: ConfigurationValues,
): Promise<DoctorCheck> {
  const base = { id: 'isolation' as const, required: false, title: 'Agent isolation' };
  // The same probe the manager runs at start, on a throw-away tree instead of the real data.
  const tree = fs.mkdtempSync(path.join(os.tmpdir(), 'am-doctor-'));
  try {
    const hidden = path.join(tree, 'hidden');
    fs.mkdirSync(hidden);
    const witness = path.join(hidden, 'witness');
    fs.writeFileSync(witness, '');
    const { isolation } = await probeSandbox({
      cwd: root,
      hidden: [hidden],
      mode,
      searchPath: env.PATH ?? '',
      witness,
    });
    const limits = describeLimits(configuration, isolation.mechanism === 'bubblewrap', env, root);
    if (isolation.enabled) {
      return {
        ...base,
        args: { mechanism: isolation.mechanism, ...limits.args },
        code: 'isolation.ok',
        detail: `agents run in a ${isolation.mechanism} sandbox that hides every workspace's data; ${limits.text}`,
        fix: null,
        status: 'ok',
      };
    }
    return {
      ...base,
      args: { reason: isolation.reason, ...limits.args },
      code:
        mode === 'off'
          ? 'isolation.off'
          : process.platform === 'darwin'
            ? 'isolation.unavailable_macos'
            : 'isolation.unavailable',
      detail: `agents would NOT be isolated: ${isolation.reason}`,
      fix:
        mode === 'off'
          ? 'set agentIsolation to "auto" in the configuration'
          : process.platform === 'darwin'
            ? 'sandbox-exec ships with macOS: check that /usr/bin/sandbox-exec exists and runs'
            : 'install bubblewrap (apt-get install bubblewrap) and allow unprivileged user namespaces',
      status: 'warn',
    };
  } finally {
    fs.rmSync(tree, { force: true, recursive: true });
  }
}

/**
 * Whether agent runs get a network of their own (issue 45), in which mode, and why not: without
 * one, runs are refused (503 network_isolation_unavailable) unless the person chose `open`.
 */
export async function checkNetwork(
  root: string,
  env: NodeJS.ProcessEnv,
  configuration: ConfigurationValues,
): Promise<DoctorCheck> {
  const base = { id: 'network' as const, required: false, title: 'Agent network' };
  const mode = configuration.networkMode;
  if (mode === 'open') {
    return {
      ...base,
      args: { mode },
      code: 'network.open',
      detail: 'agents reach the whole network (networkMode is "open"): no proxy, nothing blocked',
      fix: 'set networkMode to "allow_list" so agents reach only the hosts you allow',
      status: 'warn',
    };
  }
  let reason: string | null;
  if (configuration.agentIsolation === 'off') {
    reason = 'agentIsolation is "off"';
  } else if (process.platform === 'darwin') {
    // Seatbelt: a profile that lets a run reach its proxy's port alone (no namespace to probe).
    reason = fs.existsSync('/usr/bin/sandbox-exec') ? null : 'sandbox-exec (Seatbelt) is not available on this Mac';
  } else if (process.platform !== 'linux') {
    reason = `a network of their own needs bubblewrap (Linux) or Seatbelt (macOS); this is ${process.platform}`;
  } else {
    const program = findExecutable('bwrap', env.PATH ?? '', root);
    reason = program === null ? 'bubblewrap (`bwrap`) is not installed' : await probeNetworkNamespace(program);
  }
  if (reason === null) {
    const reach = mode === 'offline' ? 'only the model API and Agent Manager' : 'only the hosts allowed';
    return {
      ...base,
      args: { mode },
      code: `network.${mode}`,
      detail: `agent runs have a network of their own (${mode}): they reach ${reach}, through a filtering proxy`,
      fix: null,
      status: 'ok',
    };
  }
  return {
    ...base,
    args: { mode, reason },
    code: 'network.unavailable',
    detail: `agent runs will be refused (network_isolation_unavailable): ${reason}`,
    fix: 'install bubblewrap with unprivileged user namespaces, or set networkMode to "open" to let agents reach the whole network',
    status: 'warn',
  };
}

/**
 * What an agent's environment holds besides what a shell and its CLI need (issue 45): the
 * variables the person passes, and the secrets kept from it (given to their setup and teardown
 * commands, or added by the proxy as a header), each with whether its value can be read.
 */
export function checkAgentEnvironment(configuration: ConfigurationValues): DoctorCheck {
  const base = { id: 'environment' as const, required: false, title: 'Agent environment' };
  const pass = configuration.agentEnvironmentPass.join(', ') || 'nothing';
  const states = secretStates(configuration.secrets);
  const secrets =
    states.map((state) => `${state.name}${state.host === null ? '' : ` (header for ${state.host})`}`).join(', ') ||
    'none';
  const missing = states.filter((state) => !state.available);
  if (missing.length > 0) {
    const problems = missing.map((state) => state.problem).join('; ');
    return {
      ...base,
      args: { pass, problems, secrets },
      code: 'environment.secret_missing',
      detail: `secrets whose value cannot be read (runs go on without them): ${problems}`,
      fix: "export the variable in the manager's environment, or write the value to the file and chmod 600 it",
      status: 'warn',
    };
  }
  return {
    ...base,
    args: { pass, secrets },
    code: 'environment.ok',
    detail: `agents see what a shell and their CLI need, and passed: ${pass}; secrets kept from them: ${secrets}`,
    fix: null,
    status: 'ok',
  };
}
