import {
  ISOLATION_MODES,
  IsolationMode,
  LIMITS,
  MODEL_NAME_PATTERN,
  PROVIDERS,
  Provider,
  REASONING_EFFORTS,
  ReasoningEffort,
} from '@libs/contracts';

import { BudgetField, BudgetInputDto } from './budget.dto';
import { AutoStartFlag, DependencyInputDto, DependsOnList } from './dependency.dto';
import { AutoReviewField, AutoReviewInputDto } from './auto-review.dto';
import { OptionalEnum, OptionalText, ValidateEnum, ValidateText } from '../../core/validation';

/** A git ref name as a person types it (branch, tag, remote branch, commit): no option-like or odd characters. */
export const GIT_REF_PATTERN = /^(?!-)(?!.*\.\.)(?!.*@\{)[\w./@+-]+$/;

export class CreateRequirementDto {
  @AutoReviewField()
  autoReview?: AutoReviewInputDto | null;

  @OptionalText({
    description:
      "The branch, tag or commit the Requirement's branch starts from (worktree isolation only); default: the branch checked out now",
    example: 'main',
    max: 255,
    min: 1,
    pattern: GIT_REF_PATTERN,
  })
  baseRef?: string;

  @BudgetField(
    "What its RD runs may spend ({maxTokens, maxCostUsd}, either or both); null for none; absent: the configuration's default budget",
  )
  budget?: BudgetInputDto | null;

  @OptionalText({
    description: 'What to build (Markdown)',
    example: 'Report segment merge, encode, and flush durations',
    max: LIMITS.descriptionLength,
  })
  description?: string;

  @OptionalEnum(
    ISOLATION_MODES,
    "worktree: its own git worktree and branch (needs a git workspace); in_place: the person's checkout. Default: the configuration's isolation",
  )
  isolation?: IsolationMode;

  @OptionalText({
    description: 'Model name passed to the provider CLI; null for its default',
    example: 'gpt-5.1-codex',
    max: LIMITS.modelLength,
    min: 1,
    nullable: true,
    pattern: MODEL_NAME_PATTERN,
  })
  model?: string | null;

  @ValidateEnum(PROVIDERS, 'Which coding agent runs the RD session')
  provider!: Provider;

  @OptionalEnum(REASONING_EFFORTS, 'Reasoning effort passed to the provider CLI; null for its default', true)
  reasoningEffort?: ReasoningEffort | null;

  @ValidateText({
    description: 'Short title',
    example: 'Add tiered timings to the compaction profile',
    max: LIMITS.titleLength,
    min: 1,
    pattern: /\S/,
  })
  title!: string;

  @DependsOnList(false)
  dependsOn?: DependencyInputDto[];

  @AutoStartFlag()
  autoStart?: boolean;
}
