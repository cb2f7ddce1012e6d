import type { TokenUsage } from '../agents/agent-adapter';
import type { UnitOfWork } from '../core/database/unit-of-work';
import type { ActiveRun } from './active-run';
import type { RunsRepository } from './runs.repository';

/**
 * This run's own usage. Codex reports a running token total for its thread, and Claude Code a
 * running cost for its session (its tokens are per run), and a resumed session carries them
 * across runs: subtract what the session's earlier runs already recorded.
 */
export async function ownRunUsage(tx: UnitOfWork, runs: RunsRepository, active: ActiveRun): Promise<TokenUsage | null> {
  const reported = active.usage;
  if (!reported || active.run.sessionId === null) {
    return reported;
  }
  const earlier = await runs.usageOfSessionExcept(tx, active.run.sessionId, active.run.id, active.run.provider);
  const minus = (total: number, before: number) => Math.max(0, total - before);
  if (active.run.provider !== 'codex') {
    const cost = reported.costUsd;
    return { ...reported, costUsd: cost === null || cost === undefined ? null : minus(cost, earlier.costUsd) };
  }
  return {
    cachedInputTokens: minus(reported.cachedInputTokens, earlier.cachedInputTokens),
    costUsd: reported.costUsd ?? null,
    inputTokens: minus(reported.inputTokens, earlier.inputTokens),
    outputTokens: minus(reported.outputTokens, earlier.outputTokens),
    reasoningOutputTokens: minus(reported.reasoningOutputTokens, earlier.reasoningOutputTokens),
  };
}
