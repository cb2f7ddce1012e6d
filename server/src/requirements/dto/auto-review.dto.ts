import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsObject, ValidateIf, ValidateNested } from 'class-validator';

import { AutoReviewSettings, LIMITS, PROVIDERS, Provider } from '@libs/contracts';

import { OptionalEnum, OptionalInt } from '../../core/validation';
import type { RequirementEntity } from '../requirement.entity';

/** The review loop's default round limit when a body names none. */
export const DEFAULT_AUTO_REVIEW_MAX_ROUNDS = 3;

/** `autoReview` in a body: both fields have defaults, so `{}` asks for the loop as it comes. */
export class AutoReviewInputDto {
  @OptionalEnum(PROVIDERS, "Which coding agent reviews; default: the other one than the Requirement's")
  provider?: Provider;

  @OptionalInt({
    description: `At most this many review rounds per PR; default ${DEFAULT_AUTO_REVIEW_MAX_ROUNDS}`,
    max: LIMITS.autoReviewMaxRounds,
    min: 1,
  })
  maxRounds?: number;
}

export class AutoReviewSettingsDto implements AutoReviewSettings {
  @ApiProperty({ enum: PROVIDERS }) provider!: Provider;
  @ApiProperty({ maximum: LIMITS.autoReviewMaxRounds, minimum: 1 }) maxRounds!: number;
}

/** The `autoReview` field of create, edit and propose bodies; null (on an edit) turns the loop off. */
export function AutoReviewField() {
  return (target: object, property: string) => {
    ApiPropertyOptional({
      description:
        'A cross-model review loop: each new head of its open PRs, once the RD run that pushed it ended, is reviewed by `provider`, until a review finds nothing or after `maxRounds`. null: none',
      nullable: true,
      type: AutoReviewInputDto,
    })(target, property);
    ValidateIf((_o, v) => v !== undefined && v !== null)(target, property);
    IsObject()(target, property);
    ValidateNested()(target, property);
    Type(() => AutoReviewInputDto)(target, property);
  };
}

/** The other provider: a loop reviews with a different model than the one that wrote the code. */
export function otherProvider(provider: Provider): Provider {
  return provider === 'codex' ? 'claude-code' : 'codex';
}

/** The stored columns for a body's `autoReview` (undefined: not named, so unchanged). */
export function autoReviewColumns(
  input: AutoReviewInputDto | null | undefined,
  rdProvider: Provider,
): Pick<RequirementEntity, 'autoReviewMaxRounds' | 'autoReviewProvider'> | undefined {
  if (input === undefined) {
    return undefined;
  }
  if (input === null) {
    return { autoReviewMaxRounds: null, autoReviewProvider: null };
  }
  return {
    autoReviewMaxRounds: input.maxRounds ?? DEFAULT_AUTO_REVIEW_MAX_ROUNDS,
    autoReviewProvider: input.provider ?? otherProvider(rdProvider),
  };
}

export function toAutoReviewSettings(
  requirement: Pick<RequirementEntity, 'autoReviewMaxRounds' | 'autoReviewProvider'>,
): AutoReviewSettingsDto | null {
  return requirement.autoReviewProvider === null || requirement.autoReviewProvider === undefined
    ? null
    : {
        maxRounds: requirement.autoReviewMaxRounds ?? DEFAULT_AUTO_REVIEW_MAX_ROUNDS,
        provider: requirement.autoReviewProvider,
      };
}
