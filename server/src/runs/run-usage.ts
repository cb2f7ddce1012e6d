import type { TokenUsage } from '../agents/agent-adapter';
import type { UnitOfWork } from '../core/database/unit-of-work';
import type { ActiveRun } from './active-run';
import type { RunsRepository } from './runs.repository';

/**
 * This run's own token usage. Codex reports a running total for its thread, which a resumed
 * session carries across runs: subtract what the session's earlier runs already recorded.
 */
export async function ownRunUsage(tx: UnitOfWork, runs: RunsRepository, active: ActiveRun): Promise<TokenUsage | null> {
  const reported = active.usage;
  if (!reported || active.run.provider !== 'codex' || active.run.sessionId === null) {
    return reported;
  }
  const earlier = await runs.codexUsageOfSessionExcept(tx, active.run.sessionId, active.run.id);
  const minus = (total: number, before: number) => Math.max(0, total - before);
  return {
    cachedInputTokens: minus(reported.cachedInputTokens, earlier.cachedInputTokens),
    inputTokens: minus(reported.inputTokens, earlier.inputTokens),
    outputTokens: minus(reported.outputTokens, earlier.outputTokens),
    reasoningOutputTokens: minus(reported.reasoningOutputTokens, earlier.reasoningOutputTokens),
  };
}
