import type {
  Provider,
  RequirementBudget,
  RequirementUsage,
  SystemMessageArgs,
  SystemMessageCode,
} from '@libs/contracts';

import type { TokenUsage } from '../agents/agent-adapter';
import type { RequirementEntity } from './requirement.entity';
import type { BudgetInputDto } from './dto/budget.dto';

// The budget rules as pure functions (issue 18 §1): the requirements module stores the columns,
// the runs module asks these when a run reports usage, opens and closes; BudgetsService applies a
// person's change of budget. A budget caps its Requirement's whole tree (issue 25 §4): its own
// runs and those of every Requirement its agents proposed below it, so a capped parent cannot
// spend through its children. Docs: docs/decisions.md, "Budgets".

/** The Requirement's budget, or null when it has no limit at all. */
export function budgetOf(requirement: RequirementEntity): RequirementBudget | null {
  const { budgetMaxCostUsd: maxCostUsd, budgetMaxTokens: maxTokens } = requirement;
  return maxTokens === null && maxCostUsd === null ? null : { maxCostUsd, maxTokens };
}

/** What its RD runs have spent, as stored on the Requirement (summed when each run closes). */
export function usageOf(requirement: RequirementEntity): RequirementUsage {
  return {
    costUsd: requirement.usageCostUsd,
    inputTokens: requirement.usageInputTokens,
    outputTokens: requirement.usageOutputTokens,
  };
}

/**
 * What its tree has spent: its own RD runs and those of every Requirement proposed below it, at
 * any depth (summed on each ancestor as each run closes, so no snapshot walks the tree).
 */
export function treeUsageOf(requirement: RequirementEntity): RequirementUsage {
  return {
    costUsd: requirement.treeUsageCostUsd,
    inputTokens: requirement.treeUsageInputTokens,
    outputTokens: requirement.treeUsageOutputTokens,
  };
}

/** Two usages added: tokens, and the cost where either reported one. */
export function plusUsage(a: RequirementUsage, b: RequirementUsage): RequirementUsage {
  return {
    costUsd: a.costUsd === null && b.costUsd === null ? null : (a.costUsd ?? 0) + (b.costUsd ?? 0),
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
  };
}

export const NO_USAGE: RequirementUsage = Object.freeze({ costUsd: null, inputTokens: 0, outputTokens: 0 });

/** True when the Requirement's budget is spent by its tree (its own usage included). */
export function treeReached(requirement: RequirementEntity): boolean {
  return isReached(budgetOf(requirement), treeUsageOf(requirement));
}

/**
 * The Requirement whose budget keeps `chain[0]` from running: itself when its tree spent its own
 * budget, else the nearest ancestor whose tree spent its budget; null when none did. `chain` is
 * the Requirement, then its parent, its parent's parent… (RequirementsService.ancestorsForWrite).
 */
export function blockerOf(chain: RequirementEntity[]): RequirementEntity | null {
  return chain.find(treeReached) ?? null;
}

/** What a tree may still spend, per limit; null where no limit applies. */
export interface BudgetRoom {
  maxTokens: number | null;
  maxCostUsd: number | null;
}

/**
 * The room left under a chain of budgets (a Requirement and its ancestors, each with what its
 * tree has spent): per limit, the least any of them has left. Dollars are rounded down to a
 * millionth, so the room never exceeds what is left.
 */
export function roomUnder(limits: Array<{ budget: RequirementBudget | null; spent: RequirementUsage }>): BudgetRoom {
  const room: BudgetRoom = { maxCostUsd: null, maxTokens: null };
  for (const { budget, spent } of limits) {
    if (budget?.maxTokens != null) {
      const left = Math.max(0, budget.maxTokens - tokensOf(spent));
      room.maxTokens = room.maxTokens === null ? left : Math.min(room.maxTokens, left);
    }
    if (budget?.maxCostUsd != null) {
      const left = Math.max(0, Math.floor((budget.maxCostUsd - (spent.costUsd ?? 0)) * 1e6) / 1e6);
      room.maxCostUsd = room.maxCostUsd === null ? left : Math.min(room.maxCostUsd, left);
    }
  }
  return room;
}

/**
 * The budget of a Requirement an agent proposes (issue 25 §4): at most the room its parent's tree
 * has left (`room`, see roomUnder), and where no ancestor limits a kind, at most the configured
 * default, so that no agent can give its child more than it has, or clear the limit. What the
 * body asks for is taken when it fits; otherwise the cap replaces it and `clamped` says so (an
 * agent is answered with a warning rather than refused: the child is still worth having). Absent,
 * the body asks for the default, as a person's create does, and is not flagged.
 */
export function childBudget(
  room: BudgetRoom,
  requested: BudgetInputDto | null | undefined,
  defaults: { maxTokens: number | null; maxCostUsd: number | null },
): { budget: RequirementBudget | null; clamped: boolean } {
  const asked = budgetColumns(requested, defaults);
  const cap = (limit: number | null, fallback: number | null) => limit ?? fallback;
  const fit = (wanted: number | null, most: number | null) =>
    most === null ? wanted : wanted === null ? most : Math.min(wanted, most);
  const maxTokens = fit(asked.budgetMaxTokens, cap(room.maxTokens, defaults.maxTokens));
  const maxCostUsd = fit(asked.budgetMaxCostUsd, cap(room.maxCostUsd, defaults.maxCostUsd));
  const clamped =
    requested !== undefined && (maxTokens !== asked.budgetMaxTokens || maxCostUsd !== asked.budgetMaxCostUsd);
  return { budget: maxTokens === null && maxCostUsd === null ? null : { maxCostUsd, maxTokens }, clamped };
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
    return {
      costUsd,
      inputTokens: Math.max(before.inputTokens, reported.inputTokens),
      outputTokens: Math.max(before.outputTokens, reported.outputTokens),
    };
  }
  return {
    costUsd,
    inputTokens: before.inputTokens + reported.inputTokens,
    outputTokens: before.outputTokens + reported.outputTokens,
  };
}

/**
 * What a run has spent beyond what its Requirement had recorded when it opened (`before`), from
 * what its CLI reported so far (see runningUsage); nothing before its first report.
 */
export function runningSpend(
  before: RequirementUsage,
  provider: Provider,
  reported: TokenUsage | null,
): RequirementUsage {
  if (!reported) {
    return NO_USAGE;
  }
  const now = runningUsage(before, provider, reported);
  return {
    costUsd: reported.costUsd == null || now.costUsd === null ? null : now.costUsd - (before.costUsd ?? 0),
    inputTokens: now.inputTokens - before.inputTokens,
    outputTokens: now.outputTokens - before.outputTokens,
  };
}

const count = (n: number) => n.toLocaleString('en-US');
/** Cents, and hundredths of a cent below one cent (a short run costs $0.0008, not $0.00). */
const dollars = (n: number) => `$${n.toFixed(n > 0 && n < 0.01 ? 4 : 2)}`;

/**
 * The system message of a Requirement's budget pause, `blocker` being the Requirement whose budget
 * its tree spent: itself (what the tree spent, and how much of it the Requirements below spent)
 * or an ancestor (named, with what its tree spent).
 */
export function budgetNotice(requirement: RequirementEntity, blocker: RequirementEntity, runStopped: boolean): string {
  const budget = budgetOf(blocker) ?? { maxCostUsd: null, maxTokens: null };
  if (blocker.id === requirement.id) {
    return budgetReachedMessage(budget, treeUsageOf(requirement), runStopped, { own: usageOf(requirement) });
  }
  return budgetReachedMessage(budget, treeUsageOf(blocker), runStopped, {
    ancestor: { id: blocker.id, title: blocker.title },
  });
}

/**
 * What `budgetNotice` says as a code and its arguments (issue 26 §13): the same numbers, for the
 * dashboard to write in the reader's language.
 */
export function budgetNoticeCode(
  requirement: RequirementEntity,
  blocker: RequirementEntity,
  runStopped: boolean,
): { code: SystemMessageCode; args: SystemMessageArgs } {
  const budget = budgetOf(blocker) ?? { maxCostUsd: null, maxTokens: null };
  const usage = treeUsageOf(blocker);
  const args: SystemMessageArgs = {
    costUsd: usage.costUsd,
    maxCostUsd: budget.maxCostUsd,
    maxTokens: budget.maxTokens,
    runStopped,
    tokens: tokensOf(usage),
  };
  if (blocker.id === requirement.id) {
    return { args: { ...args, below: tokensOf(usage) - tokensOf(usageOf(requirement)) }, code: 'budget.reached' };
  }
  return { args: { ...args, requirementId: blocker.id, title: blocker.title }, code: 'budget.reached_ancestor' };
}

/**
 * The system message of a budget pause: what was spent against which limit, and how to go on.
 * `usage` is what the budget counts (the tree's); `own`, when the Requirement's own usage is less,
 * says how much of it the Requirements below spent; `ancestor` names the Requirement whose budget
 * it was, when not this one's.
 */
export function budgetReachedMessage(
  budget: RequirementBudget,
  usage: RequirementUsage,
  runStopped: boolean,
  tree: { own?: RequirementUsage; ancestor?: { id: string; title: string } } = {},
): string {
  const spent: string[] = [];
  if (budget.maxTokens !== null) {
    spent.push(`${count(tokensOf(usage))} of ${count(budget.maxTokens)} tokens`);
  } else {
    spent.push(`${count(tokensOf(usage))} tokens`);
  }
  if (budget.maxCostUsd !== null) {
    spent.push(
      `${usage.costUsd === null ? 'no cost reported' : dollars(usage.costUsd)} of ${dollars(budget.maxCostUsd)}`,
    );
  } else if (usage.costUsd !== null) {
    spent.push(dollars(usage.costUsd));
  }
  const stopped = runStopped ? 'The run was stopped; its input was not consumed and waits for the next run. ' : '';
  if (tree.ancestor) {
    const { id, title } = tree.ancestor;
    return `Budget reached: the tree of "${title}" (${id}) spent ${spent.join(', ')}.\n${stopped}Nothing wakes this Requirement until a person raises that budget or starts it.`;
  }
  const below = tree.own ? tokensOf(usage) - tokensOf(tree.own) : 0;
  const byChildren = below > 0 ? `, ${count(below)} of the tokens by the Requirements proposed below it` : '';
  return `Budget reached: ${spent.join(', ')}${byChildren}.\n${stopped}Nothing wakes this Requirement until a person raises its budget or starts it.`;
}
