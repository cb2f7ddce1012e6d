import * as fs from 'node:fs';
import * as path from 'node:path';

import { send } from '../../test/support/http';
import { ROOT, makeSandbox, startManager } from '../../test/support/manager-process';
import { ScenarioResult, percentile, progress, round } from '../harness';

const MCP_CALLS = 200;
/** Each CLI call is a new Node process (about 1–2 s here): fewer of them keep the scenario in its budget. */
const CLI_CALLS = 25;
const AGENT = path.join(ROOT, 'bench', 'agents', 'mcp-agent.js');

/**
 * `list_timers` from tool call to result inside a real RD run (run credential, agent sandbox,
 * real server and SQLite file): through the run's MCP server (`code-factory-cli mcp`, one
 * process for the run) and through `code-factory-cli timer show` (one process per call).
 */
export async function mcpScenario(): Promise<ScenarioResult> {
  const sandbox = makeSandbox();
  const output = path.join(path.dirname(sandbox.workspace), 'mcp-bench.json');
  const manager = await startManager({
    args: ['--log-level', 'warn'],
    env: {
      CLI_CALLS: String(CLI_CALLS),
      CODE_FACTORY_CODEX_EXECUTABLE: AGENT,
      MCP_BENCH_OUT: output,
      MCP_CALLS: String(MCP_CALLS),
    },
    sandbox,
  });
  try {
    const requirement = (
      await send(manager.origin, 'POST', '/api/requirements', { provider: 'codex', title: 'mcp bench' })
    ).json.id as string;
    // Three timers, so that the answer is a real page.
    for (const after of [600, 3600, 86_400]) {
      await send(manager.origin, 'POST', `/api/requirements/${requirement}/timers`, {
        description: `bench timer ${after}`,
        intervalSeconds: after,
        schedule: 'once',
      });
    }
    progress(`mcp: ${MCP_CALLS} list_timers calls over MCP, then ${CLI_CALLS} through code-factory-cli, in one run`);
    await send(manager.origin, 'POST', `/api/requirements/${requirement}/start`, { message: 'benchmark' });
    let run: { status: string } | undefined;
    for (;;) {
      run = (await send(manager.origin, 'GET', `/api/runs?requirementId=${requirement}`)).json.items[0];
      if (run && run.status !== 'running') {
        break;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    const measured = JSON.parse(fs.readFileSync(output, 'utf8')) as {
      cli: number[];
      failures: number;
      mcp: number[];
      startup: number;
    };
    const mcp = [...measured.mcp].sort((a, b) => a - b);
    const cli = [...measured.cli].sort((a, b) => a - b);
    return {
      figures: [
        {
          name: 'run outcome succeeded',
          target: { op: '>=', value: 1 },
          unit: '',
          value: run.status === 'succeeded' ? 1 : 0,
        },
        { name: 'failed calls', target: { op: '<=', value: 0 }, unit: '', value: measured.failures },
        { name: 'list_timers over MCP p50', unit: 'ms', value: round(percentile(mcp, 50)) },
        {
          name: 'list_timers over MCP p95',
          target: { op: '<=', value: 100 },
          unit: 'ms',
          value: round(percentile(mcp, 95)),
        },
        { name: 'MCP server start (once per run)', unit: 'ms', value: round(measured.startup, 0) },
        { name: 'timer show via code-factory-cli p50', unit: 'ms', value: round(percentile(cli, 50), 0) },
        { name: 'timer show via code-factory-cli p95', unit: 'ms', value: round(percentile(cli, 95), 0) },
        { name: 'CLI p50 / MCP p50', unit: '', value: round(percentile(cli, 50) / percentile(mcp, 50), 0) },
      ],
      notes: [
        `${mcp.length} MCP calls and ${cli.length} CLI calls of list_timers on a Requirement with 3 timers, inside one sandboxed RD run`,
      ],
      scenario: 'mcp',
    };
  } finally {
    await manager.stop();
    sandbox.cleanup();
  }
}
