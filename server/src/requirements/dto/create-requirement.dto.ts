import { LIMITS, PROVIDERS, Provider, REASONING_EFFORTS, ReasoningEffort } from '@libs/contracts';

import { OptionalEnum, OptionalText, ValidateEnum, ValidateText } from '../../core/validation';

export class CreateRequirementDto {
  @OptionalText({ description: 'What to build (Markdown)', example: 'Report segment merge, encode, and flush durations', max: LIMITS.descriptionLength })
  description?: string;

  @OptionalText({
    description: 'Model name passed to the provider CLI; null for its default',
    example: 'gpt-5.1-codex',
    max: LIMITS.modelLength,
    min: 1,
    nullable: true,
    pattern: /^[\w.:/@-]+$/,
  })
  model?: string | null;

  @ValidateEnum(PROVIDERS, 'Which coding agent runs the RD session')
  provider!: Provider;

  @OptionalEnum(REASONING_EFFORTS, 'Reasoning effort passed to the provider CLI; null for its default', true)
  reasoningEffort?: ReasoningEffort | null;

  @ValidateText({ description: 'Short title', example: 'Add tiered timings to the compaction profile', max: LIMITS.titleLength, min: 1, pattern: /\S/ })
  title!: string;
}
