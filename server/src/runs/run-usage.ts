import type { TokenUsage } from '../agents/agent-adapter';
import type { WriteTx } from '../core/database/write-tx';
import type { ActiveRun } from './active-run';

/**
 * This run's own token usage. Codex reports a running total for its thread, which a resumed
 * session carries across runs: subtract what the session's earlier runs already recorded.
 */
export async function ownRunUsage(tx: WriteTx, active: ActiveRun): Promise<TokenUsage | null> {
  const reported = active.usage;
  if (!reported || active.run.provider !== 'codex' || active.run.sessionId === null) {
    return reported;
  }
  const [earlier] = await (
    await tx.reads()
  ).query<Array<{ input: number; cached: number; output: number; reasoning: number }>>(
    `SELECT COALESCE(SUM(input_tokens), 0) AS input, COALESCE(SUM(cached_input_tokens), 0) AS cached,
            COALESCE(SUM(output_tokens), 0) AS output, COALESCE(SUM(reasoning_output_tokens), 0) AS reasoning
       FROM agent_run WHERE session_id = ? AND id <> ? AND provider = 'codex'`,
    [active.run.sessionId, active.run.id],
  );
  const minus = (total: number, before: number | undefined) => Math.max(0, total - Number(before ?? 0));
  return {
    cachedInputTokens: minus(reported.cachedInputTokens, earlier?.cached),
    inputTokens: minus(reported.inputTokens, earlier?.input),
    outputTokens: minus(reported.outputTokens, earlier?.output),
    reasoningOutputTokens: minus(reported.reasoningOutputTokens, earlier?.reasoning),
  };
}
