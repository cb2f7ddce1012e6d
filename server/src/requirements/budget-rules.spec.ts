import type { RequirementUsage } from '@libs/contracts';

import {
  addUsage,
  blockerOf,
  budgetColumns,
  budgetNotice,
  budgetReachedMessage,
  childBudget,
  isReached,
  roomUnder,
  runningSpend,
  runningUsage,
} from './budget-rules';
import type { RequirementEntity } from './requirement.entity';

const usage = (inputTokens: number, outputTokens: number, costUsd: number | null = null): RequirementUsage => ({
  costUsd,
  inputTokens,
  outputTokens,
});
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

  it("reads a run's spending beyond what its Requirement had when it opened, nothing before its first report", () => {
    const before = usage(300, 60, 0.5);
    expect(runningSpend(before, 'codex', null)).toEqual(usage(0, 0));
    expect(runningSpend(before, 'codex', report(420, 80))).toEqual(usage(120, 20, null));
    expect(runningSpend(before, 'claude-code', report(100, 20, 0.75))).toEqual(usage(100, 20, 0.25));
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

  it('finds the budget that holds a Requirement: its own, spent by its tree, else the nearest ancestor whose tree spent its budget', () => {
    const row = (id: string, budgetMaxTokens: number | null, treeTokens: number, parentRequirementId: string | null) =>
      ({
        budgetMaxCostUsd: null,
        budgetMaxTokens,
        id,
        parentRequirementId,
        title: id,
        treeUsageCostUsd: null,
        treeUsageInputTokens: treeTokens,
        treeUsageOutputTokens: 0,
        usageCostUsd: null,
        usageInputTokens: 0,
        usageOutputTokens: 0,
      }) as RequirementEntity;
    const grandparent = row('req_g', 1000, 999, null);
    const parent = row('req_p', null, 700, 'req_g');
    const child = row('req_c', 500, 200, 'req_p');
    expect(blockerOf([child, parent, grandparent])).toBeNull();
    // Its own usage is nothing, but its tree (the Requirements below it) spent its budget.
    expect(blockerOf([{ ...child, treeUsageInputTokens: 500 }, parent, grandparent])?.id).toBe('req_c');
    expect(blockerOf([child, parent, { ...grandparent, treeUsageInputTokens: 1000 }])?.id).toBe('req_g');
    expect(budgetNotice(child, { ...grandparent, treeUsageInputTokens: 1000 }, true)).toBe(
      'Budget reached: the tree of "req_g" (req_g) spent 1,000 of 1,000 tokens.\nThe run was stopped; its input was not consumed and waits for the next run. Nothing wakes this Requirement until a person raises that budget or starts it.',
    );
    expect(
      budgetNotice(
        { ...child, treeUsageInputTokens: 600, usageInputTokens: 100 },
        { ...child, treeUsageInputTokens: 600 },
        false,
      ),
    ).toBe(
      'Budget reached: 600 of 500 tokens, 500 of the tokens by the Requirements proposed below it.\nNothing wakes this Requirement until a person raises its budget or starts it.',
    );
  });

  it('leaves a tree the least room any budget up its chain has left, per limit', () => {
    expect(roomUnder([])).toEqual({ maxCostUsd: null, maxTokens: null });
    expect(
      roomUnder([
        { budget: { maxCostUsd: null, maxTokens: 1000 }, spent: usage(300, 100) },
        { budget: null, spent: usage(10 ** 6, 0) },
        { budget: { maxCostUsd: 1, maxTokens: 5000 }, spent: usage(4500, 0, 0.3) },
      ]),
    ).toEqual({ maxCostUsd: 0.7, maxTokens: 500 });
    // Never negative, and dollars rounded down (never more than is left).
    expect(roomUnder([{ budget: { maxCostUsd: 0.1, maxTokens: 10 }, spent: usage(20, 0, 0.0333333333) }])).toEqual({
      maxCostUsd: 0.066666,
      maxTokens: 0,
    });
  });

  it("gives an agent's child at most its parent's room (else the default), lowering a larger request or a null one with a flag", () => {
    const none = { maxCostUsd: null, maxTokens: null };
    const room = { maxCostUsd: null, maxTokens: 20 };
    // The escapes: null and 2,000,000,000 both end at the parent's room.
    expect(childBudget(room, null, none)).toEqual({ budget: { maxCostUsd: null, maxTokens: 20 }, clamped: true });
    expect(childBudget(room, { maxTokens: 2_000_000_000 }, none)).toEqual({
      budget: { maxCostUsd: null, maxTokens: 20 },
      clamped: true,
    });
    // Absent: the room (or the default when smaller), not flagged; a smaller request is kept.
    expect(childBudget(room, undefined, none)).toEqual({ budget: { maxCostUsd: null, maxTokens: 20 }, clamped: false });
    expect(childBudget(room, undefined, { maxCostUsd: 2, maxTokens: 5 })).toEqual({
      budget: { maxCostUsd: 2, maxTokens: 5 },
      clamped: false,
    });
    expect(childBudget(room, { maxTokens: 5 }, none)).toEqual({
      budget: { maxCostUsd: null, maxTokens: 5 },
      clamped: false,
    });
    // A kind no ancestor limits is capped by the default; asking without it is asking for none.
    expect(childBudget(room, { maxCostUsd: 3, maxTokens: 5 }, { maxCostUsd: 1, maxTokens: null })).toEqual({
      budget: { maxCostUsd: 1, maxTokens: 5 },
      clamped: true,
    });
    expect(
      childBudget({ maxCostUsd: 0.5, maxTokens: null }, { maxCostUsd: 0.25 }, { maxCostUsd: null, maxTokens: 100 }),
    ).toEqual({
      budget: { maxCostUsd: 0.25, maxTokens: 100 },
      clamped: true,
    });
    // No limit anywhere and no default: the request as it is, null included.
    expect(childBudget(none, null, none)).toEqual({ budget: null, clamped: false });
    expect(childBudget(none, { maxTokens: 2_000_000_000 }, none)).toEqual({
      budget: { maxCostUsd: null, maxTokens: 2_000_000_000 },
      clamped: false,
    });
  });

  it('says what was spent against which limit', () => {
    expect(budgetReachedMessage({ maxCostUsd: null, maxTokens: 10_000 }, usage(12_000, 345), true)).toMatch(
      /^Budget reached: 12,345 of 10,000 tokens\.\nThe run was stopped; its input was not consumed/,
    );
    expect(budgetReachedMessage({ maxCostUsd: 0.1, maxTokens: null }, usage(900, 100, 0.12), false)).toBe(
      'Budget reached: 1,000 tokens, $0.12 of $0.10.\nNothing wakes this Requirement until a person raises its budget or starts it.',
    );
    expect(budgetReachedMessage({ maxCostUsd: 5, maxTokens: 100 }, usage(100, 0), false)).toMatch(
      /^Budget reached: 100 of 100 tokens, no cost reported of \$5\.00\./,
    );
  });
});
