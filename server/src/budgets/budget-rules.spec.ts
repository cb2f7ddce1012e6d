import type { RequirementUsage } from '@libs/contracts';

import { addUsage, budgetColumns, budgetReachedMessage, crosses, isReached, runningUsage, watchBudget } from './budget-rules';
import type { RequirementEntity } from '../requirements/requirement.entity';

const usage = (inputTokens: number, outputTokens: number, costUsd: number | null = null): RequirementUsage => ({ costUsd, inputTokens, outputTokens });
const report = (inputTokens: number, outputTokens: number, costUsd: number | null = null) => ({
  cachedInputTokens: 0,
  costUsd,
  inputTokens,
  outputTokens,
  reasoningOutputTokens: 0,
});

describe('budget rules', () => {
  it('is reached when any limit is spent, exactly included; a cost limit only once a cost was reported', () => {
    expect(isReached(null, usage(10 ** 9, 10 ** 9, 1000))).toBe(false);
    expect(isReached({ maxCostUsd: null, maxTokens: 100 }, usage(80, 19))).toBe(false);
    expect(isReached({ maxCostUsd: null, maxTokens: 100 }, usage(80, 20))).toBe(true);
    expect(isReached({ maxCostUsd: 1, maxTokens: null }, usage(10 ** 6, 0))).toBe(false);
    expect(isReached({ maxCostUsd: 1, maxTokens: null }, usage(0, 0, 1))).toBe(true);
    expect(isReached({ maxCostUsd: 1, maxTokens: 100 }, usage(100, 0, 0.5))).toBe(true);
  });

  it('reads the running usage as each provider reports it: Codex its thread total, Claude Code its run tokens and session cost', () => {
    const before = usage(300, 60, 0.5);
    expect(runningUsage(before, 'codex', report(420, 80))).toEqual(usage(420, 80, 0.5));
    expect(runningUsage(before, 'claude-code', report(100, 20))).toEqual(usage(400, 80, 0.5));
    expect(runningUsage(before, 'claude-code', report(100, 20, 0.75))).toEqual(usage(400, 80, 0.75));
    expect(runningUsage(usage(0, 0), 'claude-code', report(100, 20, 0.1))).toEqual(usage(100, 20, 0.1));
  });

  it('crosses only from under the budget: a run a person started past it is theirs to finish', () => {
    const requirement = { budgetMaxCostUsd: null, budgetMaxTokens: 250, usageCostUsd: null, usageInputTokens: 0, usageOutputTokens: 0 } as RequirementEntity;
    const watch = watchBudget(requirement);
    expect(crosses(watch, 'claude-code', report(200, 2))).toBe(false);
    expect(crosses(watch, 'claude-code', report(300, 3))).toBe(true);
    const past = watchBudget({ ...requirement, usageInputTokens: 300 });
    expect(past.startedPastBudget).toBe(true);
    expect(crosses(past, 'claude-code', report(1000, 10))).toBe(false);
  });

  it('adds a closed run, its cost only when reported', () => {
    expect(addUsage(usage(1, 2), null)).toEqual(usage(1, 2));
    expect(addUsage(usage(1, 2), report(10, 20))).toEqual(usage(11, 22, null));
    expect(addUsage(usage(1, 2, 0.5), report(10, 20, 0.25))).toEqual(usage(11, 22, 0.75));
  });

  it('takes a body budget whole, null as none, and absent as the default', () => {
    const defaults = { maxCostUsd: 2, maxTokens: 5000 };
    expect(budgetColumns(undefined, defaults)).toEqual({ budgetMaxCostUsd: 2, budgetMaxTokens: 5000 });
    expect(budgetColumns(null, defaults)).toEqual({ budgetMaxCostUsd: null, budgetMaxTokens: null });
    expect(budgetColumns({ maxTokens: 10 }, defaults)).toEqual({ budgetMaxCostUsd: null, budgetMaxTokens: 10 });
  });

  it('says what was spent against which limit', () => {
    expect(budgetReachedMessage({ maxCostUsd: null, maxTokens: 10_000 }, usage(12_000, 345), true)).toMatch(
      /^Budget reached: 12,345 of 10,000 tokens\.\nThe run was stopped; its input was not consumed/,
    );
    expect(budgetReachedMessage({ maxCostUsd: 0.1, maxTokens: null }, usage(900, 100, 0.12), false)).toBe(
      'Budget reached: 1,000 tokens, $0.12 of $0.10.\nNothing wakes this Requirement until a person raises its budget or starts it.',
    );
    expect(budgetReachedMessage({ maxCostUsd: 5, maxTokens: 100 }, usage(100, 0), false)).toMatch(/^Budget reached: 100 of 100 tokens, no cost reported of \$5\.00\./);
  });
});
