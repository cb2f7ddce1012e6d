import type { RequirementBudget, RequirementUsage } from '@libs/contracts';

import { TreeBudgets } from './tree-budgets';

const usage = (inputTokens: number, outputTokens = 0, costUsd: number | null = null): RequirementUsage => ({
  costUsd,
  inputTokens,
  outputTokens,
});
const report = (inputTokens: number, outputTokens = 0, costUsd: number | null = null) => ({
  cachedInputTokens: 0,
  costUsd,
  inputTokens,
  outputTokens,
  reasoningOutputTokens: 0,
});
const tokens = (maxTokens: number): RequirementBudget => ({ maxCostUsd: null, maxTokens });
const link = (id: string, budget: RequirementBudget | null, treeUsage: RequirementUsage = usage(0)) => ({
  budget,
  id,
  treeUsage,
});

describe('tree budgets', () => {
  it('stops a run whose report takes its own budget across, only from under it: a run a person started past it is theirs to finish', () => {
    const watch = new TreeBudgets();
    watch.open('req_a', 'claude-code', usage(0), [link('req_a', tokens(250))]);
    expect(watch.report('req_a', report(200, 2))).toEqual([]);
    expect(watch.report('req_a', report(300, 3))).toEqual([{ by: 'req_a', requirementId: 'req_a' }]);
    watch.close('req_a', report(300, 3));
    expect(watch.idle).toBe(true);

    watch.open('req_a', 'claude-code', usage(303), [link('req_a', tokens(250), usage(303))]);
    expect(watch.report('req_a', report(1000, 10))).toEqual([]);
  });

  it("counts a child's run against its parent and grandparent: the report that spends an ancestor's budget stops every run in that tree", () => {
    const watch = new TreeBudgets();
    // The parent spent 101 (committed); its own run and two children's run at once.
    watch.open('req_p', 'claude-code', usage(101), [
      link('req_p', tokens(500), usage(101)),
      link('req_g', null, usage(101)),
    ]);
    watch.open('req_c1', 'claude-code', usage(0), [
      link('req_c1', tokens(100_000)),
      link('req_p', tokens(500), usage(101)),
      link('req_g', null, usage(101)),
    ]);
    watch.open('req_c2', 'codex', usage(0), [
      link('req_c2', null),
      link('req_p', tokens(500), usage(101)),
      link('req_g', null, usage(101)),
    ]);
    expect(watch.report('req_c1', report(200))).toEqual([]);
    expect(watch.report('req_p', report(100))).toEqual([]);
    expect(watch.running('req_p')).toEqual(usage(300));
    expect(watch.running('req_g')).toEqual(usage(300));
    // 101 + 200 + 100 + 100: the parent's tree spent its 500; every run under it stops, the parent's own included.
    expect(watch.report('req_c2', report(100))).toEqual([
      { by: 'req_p', requirementId: 'req_p' },
      { by: 'req_p', requirementId: 'req_c1' },
      { by: 'req_p', requirementId: 'req_c2' },
    ]);
  });

  it("moves a closed run's usage to committed, and a close that completes a tree's budget stops its other runs", () => {
    const watch = new TreeBudgets();
    watch.open('req_c1', 'codex', usage(0), [link('req_c1', null), link('req_p', tokens(300))]);
    watch.open('req_c2', 'codex', usage(0), [link('req_c2', null), link('req_p', tokens(300))]);
    // Codex reports only with its turn's end: the usage it closes with is the first the watch sees.
    expect(watch.close('req_c1', report(250, 50))).toEqual([{ by: 'req_p', requirementId: 'req_c2' }]);
    expect(watch.running('req_p')).toEqual(usage(0));
    watch.close('req_c2', null);
    expect(watch.idle).toBe(true);
  });

  it("follows a person's new budget: a lower one stops the tree's runs, a higher one lets a run started past the old one be stopped again", () => {
    const watch = new TreeBudgets();
    watch.open('req_c', 'claude-code', usage(0), [link('req_c', null), link('req_p', tokens(100), usage(150))]);
    // Opened past the parent's budget (a person's start): not stopped by it.
    expect(watch.report('req_c', report(50))).toEqual([]);
    expect(watch.rebudget('req_p', tokens(1000))).toEqual([]);
    expect(watch.rebudget('req_p', tokens(180))).toEqual([{ by: 'req_p', requirementId: 'req_c' }]);
    expect(watch.rebudget('req_x', tokens(1))).toEqual([]);
  });

  it('counts cost where the provider reports one', () => {
    const watch = new TreeBudgets();
    const budget = { maxCostUsd: 1, maxTokens: null };
    watch.open('req_c', 'claude-code', usage(0, 0, 0.5), [
      link('req_c', null, usage(0, 0, 0.5)),
      link('req_p', budget, usage(0, 0, 0.5)),
    ]);
    expect(watch.report('req_c', report(10, 1, 0.9))).toEqual([]);
    expect(watch.running('req_p')).toEqual(usage(10, 1, 0.4));
    expect(watch.report('req_c', report(20, 2, 1.0))).toEqual([{ by: 'req_p', requirementId: 'req_c' }]);
  });
});
