import { LIMITS, MODEL_NAME_PATTERN, PROVIDERS, Provider, REASONING_EFFORTS, ReasoningEffort } from '@libs/contracts';

import { BudgetField, BudgetInputDto } from './budget.dto';
import { OptionalEnum, OptionalText } from '../../core/validation';
import { AutoReviewField, AutoReviewInputDto } from './auto-review.dto';

/**
 * A person's edit (PATCH). Title, description and provider only while the Requirement is todo
 * (a started session has its provider, and its agent read the text); model and effort apply to
 * the next run. Agents have no route to this: their children's text is fixed once proposed.
 * autoReview applies from the next loop round on, in any state but cancelled.
 */
export class UpdateRequirementDto {
  @AutoReviewField()
  autoReview?: AutoReviewInputDto | null;
  @BudgetField(
    'Replaces the budget ({maxTokens, maxCostUsd}; a limit left out is none); null removes it. Raising a reached budget resumes the paused session with its pending input',
  )
  budget?: BudgetInputDto | null;

  @OptionalText({ description: 'What to build (Markdown); only while todo', max: LIMITS.descriptionLength })
  description?: string;

  @OptionalText({
    description: 'Model name passed to the provider CLI from the next run on; null for its default',
    example: 'gpt-5.1-codex',
    max: LIMITS.modelLength,
    min: 1,
    nullable: true,
    pattern: MODEL_NAME_PATTERN,
  })
  model?: string | null;

  @OptionalEnum(PROVIDERS, 'Which coding agent runs the RD session; only while todo')
  provider?: Provider;

  @OptionalEnum(REASONING_EFFORTS, 'Reasoning effort from the next run on; null for the default', true)
  reasoningEffort?: ReasoningEffort | null;

  @OptionalText({
    description: 'Short title; only while todo',
    example: 'Add tiered timings to the compaction profile',
    max: LIMITS.titleLength,
    min: 1,
    pattern: /\S/,
  })
  title?: string;
}

/** A fork copies the original's fields; any given here replace them in the copy. */
export class ForkRequirementDto extends UpdateRequirementDto {}
