import type { Provider, RequirementBudget, RequirementUsage } from '@libs/contracts';

import type { TokenUsage } from '../agents/agent-adapter';
import { NO_USAGE, addUsage, isReached, plusUsage, runningSpend } from '../requirements/budget-rules';

/** One Requirement of a run's chain (the run's own first, then its ancestors), as the unit that opened the run read it. */
export interface ChainLink {
  id: string;
  budget: RequirementBudget | null;
  /** Its tree's usage as committed then (RequirementEntity's tree usage columns). */
  treeUsage: RequirementUsage;
}

/** A run to stop: the Requirement whose run it is, and the Requirement whose budget its tree reached. */
export interface BudgetStop {
  requirementId: string;
  by: string;
}

/** A budget some watched run counts against, with what its tree had committed. */
interface Limit {
  budget: RequirementBudget | null;
  committed: RequirementUsage;
  /** Watched runs whose chain holds it (the limit is dropped when none does). */
  runs: number;
}

interface WatchedRun {
  provider: Provider;
  /** Requirement ids, the run's own first. */
  chain: string[];
  /** Its Requirement's own usage when it opened. */
  before: RequirementUsage;
  reported: TokenUsage | null;
  /**
   * The budgets in its chain already spent when it opened: only a person's start opens a run
   * then (every other opening is refused or paused), and that run is theirs to finish, so these
   * do not stop it; it pauses again when it ends.
   */
  startedPast: Set<string>;
}

/**
 * The budgets of the RD runs going on, across trees (issue 25 §4): each run counts against its
 * own Requirement's budget and every ancestor's. What a tree has spent is its committed usage
 * (the columns, summed as runs close) plus what the runs going on in it have reported since they
 * opened, so two children running at once cannot each spend their parent's whole room. When a
 * report, a run's end or a person's new budget takes a tree to its budget, every run in that tree
 * is named to be stopped. Pure bookkeeping, no I/O: RunLifecycle owns the runs and stops them.
 */
export class TreeBudgets {
  private readonly limits = new Map<string, Limit>();
  private readonly runs = new Map<string, WatchedRun>();

  /** A run opened (call once its unit committed); `chain` is its Requirement, then its ancestors. */
  open(requirementId: string, provider: Provider, before: RequirementUsage, chain: ChainLink[]): void {
    this.forget(requirementId);
    for (const link of chain) {
      // The opening unit read the latest committed rows, so they replace what an older run registered.
      const known = this.limits.get(link.id);
      this.limits.set(link.id, { budget: link.budget, committed: link.treeUsage, runs: (known?.runs ?? 0) + 1 });
    }
    this.runs.set(requirementId, {
      before,
      chain: chain.map((link) => link.id),
      provider,
      reported: null,
      startedPast: new Set(chain.filter((link) => isReached(link.budget, link.treeUsage)).map((link) => link.id)),
    });
  }

  /** The run's CLI reported its usage so far; returns the runs to stop. */
  report(requirementId: string, reported: TokenUsage): BudgetStop[] {
    const run = this.runs.get(requirementId);
    if (!run) {
      return [];
    }
    run.reported = reported;
    return this.stopsWithin(run.chain);
  }

  /**
   * The run ended with its own usage recorded (`own`, committed on its chain's rows in the same
   * unit): that usage moves from reported to committed, and a tree it took to its budget stops
   * the other runs in it.
   */
  close(requirementId: string, own: TokenUsage | null): BudgetStop[] {
    const run = this.runs.get(requirementId);
    if (!run) {
      return [];
    }
    this.runs.delete(requirementId);
    for (const id of run.chain) {
      const limit = this.limits.get(id);
      if (limit) {
        limit.committed = addUsage(limit.committed, own);
      }
    }
    const stops = this.stopsWithin(run.chain);
    this.release(run.chain);
    return stops;
  }

  /**
   * A person changed a Requirement's budget: the runs in its tree count against the new one (a
   * run that opened past it is again theirs to finish); returns the runs it stops.
   */
  rebudget(requirementId: string, budget: RequirementBudget | null): BudgetStop[] {
    const limit = this.limits.get(requirementId);
    if (!limit) {
      return [];
    }
    limit.budget = budget;
    const past = isReached(budget, limit.committed);
    for (const run of this.runs.values()) {
      if (run.chain.includes(requirementId)) {
        if (past) {
          run.startedPast.add(requirementId);
        } else {
          run.startedPast.delete(requirementId);
        }
      }
    }
    return this.stopsWithin([requirementId]);
  }

  /** What the runs going on in a Requirement's tree spent beyond its committed tree usage. */
  running(requirementId: string): RequirementUsage {
    let total = NO_USAGE;
    for (const run of this.runs.values()) {
      if (run.chain.includes(requirementId)) {
        total = plusUsage(total, runningSpend(run.before, run.provider, run.reported));
      }
    }
    return total;
  }

  /** Nothing watched any more (the runs were closed); for tests and leak checks. */
  get idle(): boolean {
    return this.runs.size === 0 && this.limits.size === 0;
  }

  private stopsWithin(limitIds: string[]): BudgetStop[] {
    const stops: BudgetStop[] = [];
    for (const id of limitIds) {
      const limit = this.limits.get(id);
      if (!limit || !isReached(limit.budget, plusUsage(limit.committed, this.running(id)))) {
        continue;
      }
      for (const [requirementId, run] of this.runs) {
        if (
          run.chain.includes(id) &&
          !run.startedPast.has(id) &&
          !stops.some((stop) => stop.requirementId === requirementId)
        ) {
          stops.push({ by: id, requirementId });
        }
      }
    }
    return stops;
  }

  private forget(requirementId: string): void {
    const run = this.runs.get(requirementId);
    if (run) {
      this.runs.delete(requirementId);
      this.release(run.chain);
    }
  }

  private release(chain: string[]): void {
    for (const id of chain) {
      const limit = this.limits.get(id);
      if (limit && --limit.runs <= 0) {
        this.limits.delete(id);
      }
    }
  }
}
