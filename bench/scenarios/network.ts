import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { type HostRule, parseHostRule } from '../../server/src/core/network/host-rules';
import { EgressProxy } from '../../server/src/network/egress-proxy';
import { send } from '../../test/support/http';
import {
  WORKTREE_AGENT,
  createRequirement,
  initRepository,
  settled,
  sh,
  startRun,
  wholeReport,
} from '../../test/support/git-repo';
import { ManagerProcess, ROOT, makeSandbox, startManager } from '../../test/support/manager-process';
import { until } from '../../test/support/wait';
import { ScenarioResult, percentile, progress, round } from '../harness';

const ROUNDS = 8;
const DOWNLOAD_MB = 100;
const DOWNLOADS = 3;
const AGENTS = 20;
const RELAY = path.join(ROOT, 'dist', 'server', 'src', 'network', 'sandbox-relay.js');

const sorted = (list: number[]) => [...list].sort((a, b) => a - b);

interface Side {
  label: 'allow_list' | 'open';
  manager: ManagerProcess;
  reports: string;
  toAgent: number[];
}

/** POST /start of a new Requirement until its (synthetic) agent runs: what the run's network adds to a start. */
async function firstRun(side: Side, round: number): Promise<void> {
  const requirement = await createRequirement(side.manager, { title: `Network ${side.label} ${round}` });
  const report = path.join(side.reports, `${side.label}-${round}.json`);
  const started = Date.now();
  await startRun(side.manager, requirement.id, `report:${report}`);
  const place = await until('the agent to start', async () => wholeReport(report), 60_000, 5);
  side.toAgent.push(place.startedAt - started);
  const { run } = await settled(side.manager, requirement.id, 1);
  if (run.status !== 'succeeded') {
    throw new Error(`a run with the network ${side.label} ended ${run.status}: ${run.error}`);
  }
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} exited ${code}: ${err}`))));
  });
}

/** Serves `argv[1]` MB of "a" on a loopback port it prints. */
const DOWNLOAD_SERVER = `
const http = require('node:http');
const mb = Number(process.argv[1]);
const chunk = Buffer.alloc(1024 * 1024, 0x61);
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'Content-Length': String(chunk.length * mb) });
  let sent = 0;
  const write = () => {
    while (sent < mb) {
      sent++;
      if (!res.write(chunk)) { res.once('drain', write); return; }
    }
    res.end();
  };
  write();
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

/**
 * A 100 MB download from a loopback server by curl, straight and through the path a run's
 * processes take: its network namespace, the relay, the run's proxy on a Unix socket. Seconds
 * each, as curl measured them.
 */
async function downloads(): Promise<{ direct: number[]; proxied: number[] }> {
  // The server is a process of its own, as a remote host would be: sharing the proxy's event loop
  // would charge its writes to the proxy.
  const server = spawn(process.execPath, ['-e', DOWNLOAD_SERVER, String(DOWNLOAD_MB)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-bench-net-'));
  const socketPath = path.join(dir, 'proxy.sock');
  const allow = [parseHostRule(`127.0.0.1:${port}`) as HostRule];
  const proxy = new EgressProxy({
    onBlocked: () => undefined,
    policy: () => ({ allow, deny: [], essential: [], mode: 'allow_list', requirementAllow: [] }),
  });
  await proxy.listen(socketPath);
  const url = `http://127.0.0.1:${port}/data`;
  const curl = ['-s', '-o', '/dev/null', '-w', '%{time_total}'];
  const direct: number[] = [];
  const proxied: number[] = [];
  try {
    for (let i = 0; i < DOWNLOADS; i++) {
      direct.push(Number(await run('curl', [...curl, '--noproxy', '*', url])));
      const inside = [
        process.execPath,
        RELAY,
        socketPath,
        '3128',
        '-',
        '--',
        'curl',
        ...curl,
        '-x',
        'http://127.0.0.1:3128',
        url,
      ];
      const bwrap = ['--ro-bind', '/', '/', '--dev-bind', '/dev', '/dev', '--unshare-net', '--bind', dir, dir, '--'];
      proxied.push(Number(await run('bwrap', [...bwrap, ...inside])));
    }
  } finally {
    await proxy.close();
    server.kill();
    fs.rmSync(dir, { force: true, recursive: true });
  }
  return { direct, proxied };
}

/** Proportional set size (kB) of a process: its share of pages it shares with others (the Node binary). */
function pssKb(pid: number): number {
  try {
    const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    return Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** The relays running now (one per run with a network of its own). */
function relayPids(): number[] {
  return fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('sandbox-relay.js');
      } catch {
        return false;
      }
    });
}

/** Twenty runs at once with networks of their own: the manager's growth, and what their relays hold. */
async function twentyAgents(side: Side): Promise<{ managerMb: number; relaysMb: number; relays: number }> {
  const requirements = await Promise.all(
    Array.from({ length: AGENTS }, (_, i) => createRequirement(side.manager, { title: `Twenty ${i}` })),
  );
  const before = rssMb(side.manager.child.pid as number);
  await Promise.all(
    requirements.map((r) =>
      send(side.manager.origin, 'POST', `/api/requirements/${r.id}/start`, { message: sh('sleep 6') }),
    ),
  );
  const relays = await until(
    `${AGENTS} relays`,
    async () => {
      const pids = relayPids();
      return pids.length >= AGENTS && pids;
    },
    60_000,
    50,
  );
  const relaysMb = relays.reduce((sum, pid) => sum + pssKb(pid), 0) / 1024;
  const managerMb = rssMb(side.manager.child.pid as number) - before;
  for (const r of requirements) {
    await settled(side.manager, r.id, 1);
  }
  return { managerMb, relays: relays.length, relaysMb };
}

/**
 * Issue 45: what a run's network of its own costs. Two managers on two copies of one repository,
 * `allow_list` (a namespace, a relay and a proxy per run) and `open` (the host's network),
 * measured alternately: a first run's time until its agent runs; a 100 MB download through the
 * relay and proxy against straight; and twenty runs at once.
 */
export async function networkScenario(): Promise<ScenarioResult> {
  const boxes = [makeSandbox(), makeSandbox()];
  const sides: Side[] = [];
  let twenty: Awaited<ReturnType<typeof twentyAgents>>;
  let transfer: Awaited<ReturnType<typeof downloads>>;
  try {
    for (const box of boxes) {
      initRepository(box.workspace, { 'README.md': '# network bench\n' });
    }
    const env = { CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT, CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT };
    for (const [i, label] of (['allow_list', 'open'] as const).entries()) {
      sides.push({
        label,
        manager: await startManager({
          args: ['--log-level', 'warn'],
          env: { ...env, CODE_FACTORY_NETWORK_MODE: label },
          sandbox: boxes[i],
        }),
        reports: boxes[i].shared,
        toAgent: [],
      });
    }
    const status = (await send(sides[0].manager.origin, 'GET', '/api/network')).json as {
      isolated: boolean;
      unavailableReason: string | null;
    };
    if (!status.isolated) {
      throw new Error(`runs cannot have a network of their own here: ${status.unavailableReason}`);
    }
    for (let r = 0; r < ROUNDS; r++) {
      progress(`network: round ${r + 1}/${ROUNDS}`);
      for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
        await firstRun(side, r);
      }
    }
    progress(`network: ${DOWNLOAD_MB} MB downloads`);
    transfer = await downloads();
    progress(`network: ${AGENTS} agents at once`);
    twenty = await twentyAgents(sides[0]);
  } finally {
    await Promise.all(sides.map((side) => side.manager.stop()));
    boxes.forEach((box) => box.cleanup());
  }
  const [isolated, open] = sides;
  const p = (list: number[], at: number) => percentile(sorted(list), at);
  const added = (at: number) => p(isolated.toAgent, at) - p(open.toAgent, at);
  const median = (list: number[]) => p(list, 50);
  return {
    figures: [
      {
        name: `start latency the run's network adds (p50 of ${ROUNDS}, allow_list − open)`,
        target: { op: '<=', value: 50 },
        unit: 'ms',
        value: round(added(50), 0),
      },
      {
        name: `start latency the run's network adds (p95 of ${ROUNDS})`,
        unit: 'ms',
        value: round(added(95), 0),
      },
      {
        name: `${DOWNLOAD_MB} MB from loopback: throughput through the relay and proxy / straight (median of ${DOWNLOADS})`,
        target: { op: '>=', value: 0.8 },
        unit: '',
        value: round(median(transfer.direct) / median(transfer.proxied)),
      },
      {
        name: `${AGENTS} agents at once: their relays' memory (PSS, all)`,
        unit: 'MB',
        value: round(twenty.relaysMb, 0),
      },
      { name: `${AGENTS} agents at once: the manager's growth (RSS)`, unit: 'MB', value: round(twenty.managerMb, 0) },
    ],
    notes: [
      ...sides.map((s) => `${s.label}: to agent ${s.toAgent.join(', ')} ms`),
      `downloads straight ${transfer.direct.join(', ')} s; through the proxy ${transfer.proxied.join(', ')} s`,
      `${twenty.relays} relays seen`,
    ],
    scenario: 'network',
  };
}
