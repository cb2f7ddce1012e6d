import type { Provider, RequirementBudget, RequirementUsage } from '@libs/contracts';

import type { TokenUsage } from '../agents/agent-adapter';
import type { RequirementEntity } from '../requirements/requirement.entity';
import type { BudgetInputDto } from './dto/budget.dto';

// The budget rules as pure functions (issue 18 §1): the requirements module stores the columns,
// the runs module asks these when a run reports usage, opens and closes; BudgetsService applies a
// person's change of budget. Docs: docs/decisions.md, "Budgets".

/** The Requirement's budget, or null when it has no limit at all. */
export function budgetOf(requirement: RequirementEntity): RequirementBudget | null {
  const { budgetMaxCostUsd: maxCostUsd, budgetMaxTokens: maxTokens } = requirement;
  return maxTokens === null && maxCostUsd === null ? null : { maxCostUsd, maxTokens };
}

/** What its RD runs have spent, as stored on the Requirement (summed when each run closes). */
export function usageOf(requirement: RequirementEntity): RequirementUsage {
  return { costUsd: requirement.usageCostUsd, inputTokens: requirement.usageInputTokens, outputTokens: requirement.usageOutputTokens };
}

/**
 * The columns a body's budget sets: a budget object replaces both limits (one it leaves out is
 * none), null clears both, and absent (creation only) takes the workspace default.
 */
export function budgetColumns(
  input: BudgetInputDto | null | undefined,
  defaults: { maxTokens: number | null; maxCostUsd: number | null },
): Pick<RequirementEntity, 'budgetMaxCostUsd' | 'budgetMaxTokens'> {
  const budget = input === undefined ? defaults : input;
  return { budgetMaxCostUsd: budget?.maxCostUsd ?? null, budgetMaxTokens: budget?.maxTokens ?? null };
}

/** Tokens as the budget counts them: input (cache reads included, as reported) plus output. */
export const tokensOf = (usage: RequirementUsage): number => usage.inputTokens + usage.outputTokens;

/** True when any limit of the budget is spent (reaching a limit exactly counts: nothing is left). */
export function isReached(budget: RequirementBudget | null, usage: RequirementUsage): boolean {
  if (!budget) {
    return false;
  }
  const tokens = budget.maxTokens !== null && tokensOf(usage) >= budget.maxTokens;
  const cost = budget.maxCostUsd !== null && usage.costUsd !== null && usage.costUsd >= budget.maxCostUsd;
  return tokens || cost;
}

/** The Requirement's usage with one closed run's own usage added. */
export function addUsage(usage: RequirementUsage, run: TokenUsage | null): RequirementUsage {
  if (!run) {
    return usage;
  }
  const cost = run.costUsd ?? null;
  return {
    costUsd: cost === null ? usage.costUsd : (usage.costUsd ?? 0) + cost,
    inputTokens: usage.inputTokens + run.inputTokens,
    outputTokens: usage.outputTokens + run.outputTokens,
  };
}

/**
 * The Requirement's usage while a run is going, from what the CLI reported so far and what the
 * Requirement had spent when the run opened (`before`). Codex reports its thread's running token
 * total (earlier runs included), Claude Code the run's tokens and a running cost for the session:
 * the same arithmetic as `ownRunUsage` at the run's end, without reading the runs again.
 */
export function runningUsage(before: RequirementUsage, provider: Provider, reported: TokenUsage): RequirementUsage {
  const cost = reported.costUsd ?? null;
  const costUsd = cost === null ? before.costUsd : Math.max(before.costUsd ?? 0, cost);
  if (provider === 'codex') {
    return { costUsd, inputTokens: Math.max(before.inputTokens, reported.inputTokens), outputTokens: Math.max(before.outputTokens, reported.outputTokens) };
  }
  return { costUsd, inputTokens: before.inputTokens + reported.inputTokens, outputTokens: before.outputTokens + reported.outputTokens };
}

/** What a run watches: the budget when it opened, the spending then, and whether it opened past it. */
export interface BudgetWatch {
  budget: RequirementBudget | null;
  before: RequirementUsage;
  /**
   * A person started the Requirement with its budget already spent: that run is theirs to
   * finish (stopping it at its first report would make the explicit start useless); it pauses
   * again when it ends.
   */
  startedPastBudget: boolean;
}

export function watchBudget(requirement: RequirementEntity): BudgetWatch {
  const budget = budgetOf(requirement);
  const before = usageOf(requirement);
  return { before, budget, startedPastBudget: isReached(budget, before) };
}

/** True when this report takes the Requirement across its budget (the run is then stopped). */
export function crosses(watch: BudgetWatch, provider: Provider, reported: TokenUsage): boolean {
  return !watch.startedPastBudget && isReached(watch.budget, runningUsage(watch.before, provider, reported));
}

const count = (n: number) => n.toLocaleString('en-US');
/** Cents, and hundredths of a cent below one cent (a short run costs $0.0008, not $0.00). */
const dollars = (n: number) => `$${n.toFixed(n > 0 && n < 0.01 ? 4 : 2)}`;

/** The system message of a budget pause: what was spent against which limit, and how to go on. */
export function budgetReachedMessage(budget: RequirementBudget, usage: RequirementUsage, runStopped: boolean): string {
  const spent: string[] = [];
  if (budget.maxTokens !== null) {
    spent.push(`${count(tokensOf(usage))} of ${count(budget.maxTokens)} tokens`);
  } else {
    spent.push(`${count(tokensOf(usage))} tokens`);
  }
  if (budget.maxCostUsd !== null) {
    spent.push(`${usage.costUsd === null ? 'no cost reported' : dollars(usage.costUsd)} of ${dollars(budget.maxCostUsd)}`);
  } else if (usage.costUsd !== null) {
    spent.push(dollars(usage.costUsd));
  }
  const stopped = runStopped ? 'The run was stopped; its input was not consumed and waits for the next run. ' : '';
  return `Budget reached: ${spent.join(', ')}.\n${stopped}Nothing wakes this Requirement until a person raises its budget or starts it.`;
}
