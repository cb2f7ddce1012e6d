import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

import {
  AgentSession,
  ISOLATION_MODES,
  IsolationMode,
  PROVIDERS,
  Provider,
  REASONING_EFFORTS,
  REQUIREMENT_CREATORS,
  REQUIREMENT_STATUSES,
  ReasoningEffort,
  Requirement,
  RequirementCreator,
  RequirementRunner,
  RequirementStatus,
  SESSION_STATES,
  SessionState,
} from '@libs/contracts';

import { runnerView } from '../../core/board/runner-directory';
import { PageInfoDto } from '../../core/http/pagination';
import { RequirementWorktreeResponseDto, toWorktreeResponse } from './worktree-place.dto';
import { RequirementDependencyResponseDto, toDependencyResponse } from './dependency.dto';
import { budgetOf, treeUsageOf, usageOf } from '../budget-rules';
import { RequirementBudgetResponseDto, RequirementUsageResponseDto } from './budget.dto';
import type { AgentSessionEntity } from '../agent-session.entity';
import { AutoReviewSettingsDto, toAutoReviewSettings } from './auto-review.dto';
import { RequirementLandingResponseDto, toLandingResponse } from './landing.dto';
import { AttentionItemDto, byAttentionOrder, toAttentionItem } from './attention.dto';
import { RequirementSourceDto, toSourceResponse } from './source.dto';
import type { RequirementEntity } from '../requirement.entity';

export class AgentSessionResponseDto implements AgentSession {
  @ApiProperty({ example: 'ses_0b7c…' }) id!: string;
  @ApiProperty() requirementId!: string;
  @ApiProperty({ enum: PROVIDERS }) provider!: Provider;
  @ApiProperty({ description: "The provider CLI's own session/thread id, once known", nullable: true, type: String })
  nativeSessionId!: string | null;
  @ApiProperty({ enum: SESSION_STATES }) state!: SessionState;
  @ApiProperty({ nullable: true, type: String }) lastError!: string | null;
  @ApiProperty({ description: 'Every deliverable message up to this sequence was consumed by a successful run' })
  lastConsumedMessageSequence!: number;
  @ApiProperty({ description: "The sequence of the conversation's latest message (0 when empty)" })
  lastMessageSequence!: number;
  @ApiProperty({ description: 'Deliverable messages after the consumed boundary' }) pendingMessageCount!: number;
  @ApiProperty({
    description:
      "When a stop paused the session (null when not paused). While paused, triggers, timers and queued messages wake nothing; a start (or a person's reply) resumes with every pending message",
    nullable: true,
    type: String,
  })
  pausedAt!: string | null;
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;
}

export class RequirementResponseDto implements Requirement {
  @ApiProperty({ example: 'req_5f0e…' }) id!: string;
  @ApiProperty() title!: string;
  @ApiProperty({ description: 'Markdown' }) description!: string;
  @ApiProperty({ enum: REQUIREMENT_STATUSES }) status!: RequirementStatus;
  @ApiProperty({ enum: PROVIDERS }) provider!: Provider;
  @ApiProperty({ nullable: true, type: String }) model!: string | null;
  @ApiProperty({ enum: REASONING_EFFORTS, nullable: true }) reasoningEffort!: ReasoningEffort | null;
  @ApiProperty({ enum: REQUIREMENT_CREATORS }) createdBy!: RequirementCreator;
  @ApiProperty({ nullable: true, type: String }) parentRequirementId!: string | null;
  @ApiProperty({ nullable: true, type: String }) sourceSessionId!: string | null;
  @ApiProperty({
    description: 'The Requirement this one was forked from (POST /requirements/:id/fork), or null',
    nullable: true,
    type: String,
  })
  forkedFromRequirementId!: string | null;
  @ApiProperty({
    description: "The forge's issue it was imported from (POST /requirements/import), as it was then; null: made here",
    nullable: true,
    type: RequirementSourceDto,
  })
  source!: RequirementSourceDto | null;
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;
  @ApiProperty({ nullable: true, type: String }) completedAt!: string | null;
  @ApiProperty({ type: AgentSessionResponseDto }) session!: AgentSessionResponseDto;
  @ApiProperty({
    description: "worktree: the agent works in its own git worktree and branch; in_place: in the person's checkout",
    enum: ISOLATION_MODES,
  })
  isolation!: IsolationMode;
  @ApiProperty({
    description: "The ref the Requirement's branch starts from (null in place)",
    nullable: true,
    type: String,
  })
  baseRef!: string | null;
  @ApiProperty({
    description: 'Where the work is, once a run prepared it (null before)',
    nullable: true,
    type: RequirementWorktreeResponseDto,
  })
  worktree!: RequirementWorktreeResponseDto | null;
  @ApiPropertyOptional({
    description: 'Requirements this one waits for, with their state',
    type: [RequirementDependencyResponseDto],
  })
  dependsOn?: RequirementDependencyResponseDto[];
  @ApiPropertyOptional({ description: 'Starts on its own once every dependency is met' }) autoStart?: boolean;
  @ApiProperty({
    description: 'The cross-model review loop of its PRs, or null for none',
    nullable: true,
    type: AutoReviewSettingsDto,
  })
  autoReview!: AutoReviewSettingsDto | null;
  @ApiProperty({
    description: 'What its RD runs may spend, or null for no limit',
    nullable: true,
    type: RequirementBudgetResponseDto,
  })
  budget!: RequirementBudgetResponseDto | null;
  @ApiProperty({
    description: 'What its RD runs have spent (summed as each run closes)',
    type: RequirementUsageResponseDto,
  })
  usage!: RequirementUsageResponseDto;
  @ApiProperty({
    description:
      'What its tree has spent: its own usage plus that of every Requirement its agents proposed below it, at any depth (summed as each run closes). Its budget caps this',
    type: RequirementUsageResponseDto,
  })
  treeUsage!: RequirementUsageResponseDto;
  @ApiProperty({
    description:
      "When a budget paused the session, else null: its own, spent by its tree, or an ancestor's, spent by that ancestor's tree. Nothing but a person raising that budget or starting it wakes it meanwhile",
    nullable: true,
    type: String,
  })
  budgetReachedAt!: string | null;
  @ApiProperty({
    description:
      'Where its work stands against its base and the other live Requirements (the conflict radar), and its land',
    type: RequirementLandingResponseDto,
  })
  landing!: RequirementLandingResponseDto;
  @ApiProperty({
    description: 'Why it needs its person now, oldest first (empty when it does not): the items of GET /attention',
    type: [AttentionItemDto],
  })
  attention!: AttentionItemDto[];
  @ApiProperty({
    description: 'Team mode: the runner it runs on (set by its first run), or null (not on a board, or never run)',
    nullable: true,
    type: () => RequirementRunnerResponseDto,
  })
  runner!: RequirementRunnerResponseDto | null;
}

export class RequirementRunnerResponseDto implements RequirementRunner {
  @ApiProperty({ example: 'rnr_3f2a…' }) id!: string;
  @ApiProperty({ description: 'The machine it runs on' }) host!: string;
  @ApiProperty({ description: "The runner's person's name" }) person!: string;
  @ApiProperty({
    description: 'Its heartbeat is younger than one lease period; false: runner offline (its runs are not failed)',
  })
  online!: boolean;
}

export class RequirementPageDto extends PageInfoDto {
  @ApiProperty({ type: [RequirementResponseDto] }) items!: RequirementResponseDto[];
}

export class AgentSessionPageDto extends PageInfoDto {
  @ApiProperty({ type: [AgentSessionResponseDto] }) items!: AgentSessionResponseDto[];
}

export function toSessionResponse(session: AgentSessionEntity): AgentSessionResponseDto {
  return {
    createdAt: session.createdAt,
    id: session.id,
    lastConsumedMessageSequence: session.lastConsumedMessageSequence,
    lastMessageSequence: session.lastMessageSequence,
    lastError: session.lastError,
    nativeSessionId: session.nativeSessionId,
    pausedAt: session.pausedAt,
    pendingMessageCount: session.pendingMessageCount,
    provider: session.provider,
    requirementId: session.requirementId,
    state: session.state,
    updatedAt: session.updatedAt,
  };
}

export function toRequirementResponse(
  requirement: RequirementEntity,
  session: AgentSessionEntity,
): RequirementResponseDto {
  const place = requirement.worktree ?? null;
  return {
    attention: (requirement.attention ?? []).map(toAttentionItem).sort(byAttentionOrder),
    autoReview: toAutoReviewSettings(requirement),
    baseRef: place?.baseRef ?? null,
    budget: budgetOf(requirement),
    budgetReachedAt: requirement.budgetReachedAt,
    completedAt: requirement.completedAt,
    createdAt: requirement.createdAt,
    createdBy: requirement.createdBy,
    description: requirement.description,
    forkedFromRequirementId: requirement.forkedFromRequirementId,
    id: requirement.id,
    // A Requirement from before worktrees has a row saying in_place (its migration); none at all is the same.
    isolation: place?.isolation ?? 'in_place',
    landing: toLandingResponse(requirement.landing),
    model: requirement.model,
    parentRequirementId: requirement.parentRequirementId,
    provider: requirement.provider,
    reasoningEffort: requirement.reasoningEffort,
    runner: runnerView(requirement.runnerId),
    session: toSessionResponse(session),
    source: toSourceResponse(requirement.source),
    sourceSessionId: requirement.sourceSessionId,
    status: requirement.status,
    title: requirement.title,
    // The card changes when its session (state, pending count), its worktree (ahead, dirty) or its landing does: one version for all.
    updatedAt: latest(
      requirement.updatedAt,
      session.updatedAt,
      place?.updatedAt ?? '',
      requirement.landing?.updatedAt ?? '',
    ),
    treeUsage: treeUsageOf(requirement),
    usage: usageOf(requirement),
    worktree: toWorktreeResponse(place),
    ...(requirement.dependsOn && {
      autoStart: requirement.dependsOn.some((d) => d.autoStart),
      dependsOn: requirement.dependsOn.map(toDependencyResponse),
    }),
  };
}

function latest(...times: string[]): string {
  return times.reduce((a, b) => (b > a ? b : a));
}
