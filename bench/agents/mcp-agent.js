#!/usr/bin/env node
// A synthetic RD agent for the `mcp` benchmark: inside a real run (its environment, its run
// credential, the agent sandbox) it does what a CLI does with the run's MCP server: starts
// `code-factory-cli mcp` and calls `list_timers` MCP_CALLS times, timing each call from request to
// result; then runs `code-factory-cli timer show` CLI_CALLS times, timing each process. It writes
// the latencies to MCP_BENCH_OUT and speaks Codex's `exec --json` output so the run succeeds.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const { performance } = require('node:perf_hooks');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const MCP_CALLS = Number(process.env.MCP_CALLS ?? 200);
const CLI_CALLS = Number(process.env.CLI_CALLS ?? 25);
/** The soak spaces its calls out, as a working agent does between tool calls. */
const INTERVAL_MS = Number(process.env.MCP_CALL_INTERVAL_MS ?? 0);

async function main() {
  out({ thread_id: `mcp-bench-${process.pid}`, type: 'thread.started' });
  out({ type: 'turn.started' });
  const cli = process.env.CODE_FACTORY_CLI;
  const startedAt = performance.now();
  const client = new Client({ name: 'mcp-bench', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ args: ['mcp'], command: cli, env: process.env, stderr: 'inherit' }));
  const startup = performance.now() - startedAt;
  const mcp = [];
  let failures = 0;
  for (let i = 0; i < MCP_CALLS; i++) {
    const t = performance.now();
    const result = await client.callTool({ arguments: {}, name: 'list_timers' });
    mcp.push(performance.now() - t);
    failures += result.isError ? 1 : 0;
    if (INTERVAL_MS > 0) {
      await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS));
    }
  }
  await client.close();
  const shell = [];
  for (let i = 0; i < CLI_CALLS; i++) {
    const t = performance.now();
    const result = spawnSync(cli, ['timer', 'show'], { encoding: 'utf8' });
    shell.push(performance.now() - t);
    failures += result.status === 0 ? 0 : 1;
  }
  if (process.env.MCP_BENCH_OUT) {
    fs.writeFileSync(process.env.MCP_BENCH_OUT, JSON.stringify({ cli: shell, failures, mcp, startup }));
  }
  if (failures > 0) {
    throw new Error(`${failures} MCP or CLI calls failed`);
  }
  out({
    item: {
      id: 'item_final',
      text: `Called list_timers ${MCP_CALLS} times over MCP and ${CLI_CALLS} times through the CLI.`,
      type: 'agent_message',
    },
    type: 'item.completed',
  });
  out({
    type: 'turn.completed',
    usage: { cached_input_tokens: 0, input_tokens: 1, output_tokens: 1, reasoning_output_tokens: 0 },
  });
}

process.stdin.resume();
process.stdin.on('end', () => {
  main().then(
    () => process.exit(0),
    (err) => {
      out({ error: { message: String(err && err.stack) }, type: 'turn.failed' });
      process.exit(1);
    },
  );
});
