import { InitialSchema1764460800000 } from './1764460800000-initial-schema';
import { AgentRuns1764547200000 } from './1764547200000-agent-runs';
import { PullRequests1764633600000 } from './1764633600000-pull-requests';
import { TimersAndTriggers1764720000000 } from './1764720000000-timers-and-triggers';
import { ReviewsAndGitHub1764806400000 } from './1764806400000-reviews-and-github';
import { SessionPause1764892800000 } from './1764892800000-session-pause';
import { Search1765238400000 } from './1765238400000-search';
import { RequirementWorktrees1765324800000 } from './1765324800000-requirement-worktrees';
import { UsageAndForks1765411200000 } from './1765411200000-usage-and-forks';
import { RequirementDependencies1765497600000 } from './1765497600000-requirement-dependencies';
import { RequirementBudgets1765584000000 } from './1765584000000-requirement-budgets';
import { ReviewLoop1765670400000 } from './1765670400000-review-loop';
import { ModelCatalog1765756800000 } from './1765756800000-model-catalog';
import { BudgetTrees1765846800000 } from './1765846800000-budget-trees';
import { MessageCodes1765933200000 } from './1765933200000-message-codes';
import { Landing1766019600000 } from './1766019600000-landing';
import { AttachmentContent1766106000000 } from './1766106000000-attachment-content';
import { PeopleAsActors1766106600000 } from './1766106600000-people-as-actors';
import { RequirementRunner1766193000000 } from './1766193000000-requirement-runner';
import { AgentRepositories1766279400000 } from './1766279400000-agent-repositories';
import { Network1766365800000 } from './1766365800000-network';
import { ReactionCursors1766452200000 } from './1766452200000-reaction-cursors';
import { ReviewComments1766538600000 } from './1766538600000-review-comments';
import { Checkpoints1766539800000 } from './1766539800000-checkpoints';
import { LandedWork1766541000000 } from './1766541000000-landed-work';
import { Attention1766542000000 } from './1766542000000-attention';
import { Notifications1766543000000 } from './1766543000000-notifications';
import { Devices1766544000000 } from './1766544000000-devices';
import { CutChannelUrls1766545000000 } from './1766545000000-cut-channel-urls';
import { RequirementSource1766546000000 } from './1766546000000-requirement-source';
import { PullRequestForge1766547000000 } from './1766547000000-pull-request-forge';

/** Every migration, oldest first. New ones are appended; shipped ones are never edited. */
export const MIGRATIONS = [
  InitialSchema1764460800000,
  AgentRuns1764547200000,
  PullRequests1764633600000,
  TimersAndTriggers1764720000000,
  ReviewsAndGitHub1764806400000,
  SessionPause1764892800000,
  Search1765238400000,
  RequirementWorktrees1765324800000,
  UsageAndForks1765411200000,
  RequirementDependencies1765497600000,
  RequirementBudgets1765584000000,
  ReviewLoop1765670400000,
  ModelCatalog1765756800000,
  BudgetTrees1765846800000,
  MessageCodes1765933200000,
  Landing1766019600000,
  AttachmentContent1766106000000,
  PeopleAsActors1766106600000,
  RequirementRunner1766193000000,
  AgentRepositories1766279400000,
  Network1766365800000,
  ReactionCursors1766452200000,
  ReviewComments1766538600000,
  Checkpoints1766539800000,
  LandedWork1766541000000,
  Attention1766542000000,
  Notifications1766543000000,
  Devices1766544000000,
  CutChannelUrls1766545000000,
  RequirementSource1766546000000,
  PullRequestForge1766547000000,
];
