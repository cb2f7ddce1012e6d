#!/usr/bin/env node
// A synthetic agent for benchmarks: speaks Codex's `exec --json` output, printing
// FLOOD_RATE trace events a second for FLOOD_SECONDS, then a final message and success.
// A Requirement titled with "[mcp]" (the soak's) gets the MCP agent instead (mcp-agent.js): its
// title reaches the CLI in the developer instructions.
if (process.argv.some((arg) => arg.includes('[mcp]'))) {
  require('./mcp-agent.js');
} else {
  flood();
}

function flood() {
  const rate = Number(process.env.FLOOD_RATE ?? 2000);
  const seconds = Number(process.env.FLOOD_SECONDS ?? 30);
  const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
  process.stdin.resume();
  out({ thread_id: `flood-${process.pid}`, type: 'thread.started' });
  out({ type: 'turn.started' });
  const total = rate * seconds;
  const started = Date.now();
  let sent = 0;
  const tick = () => {
    const due = Math.min(total, Math.floor(((Date.now() - started) / 1000) * rate));
    let chunk = '';
    for (; sent < due; sent++) {
      chunk += `${JSON.stringify({ item: { id: `item_${sent}`, text: `step ${sent}: thinking about the compaction profile`, type: 'reasoning' }, type: 'item.completed' })}\n`;
    }
    if (chunk) {
      process.stdout.write(chunk);
    }
    if (sent >= total) {
      out({
        item: { id: 'item_final', text: `Flooded ${total} events.`, type: 'agent_message' },
        type: 'item.completed',
      });
      out({
        type: 'turn.completed',
        usage: { cached_input_tokens: 0, input_tokens: 1, output_tokens: 1, reasoning_output_tokens: 0 },
      });
      process.exit(0);
    }
    setTimeout(tick, 10);
  };
  tick();
}
