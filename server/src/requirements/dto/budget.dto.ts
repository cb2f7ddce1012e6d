import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsObject, ValidateIf, ValidateNested } from 'class-validator';

import { LIMITS, RequirementBudget, RequirementUsage } from '@libs/contracts';

import { OptionalInt, OptionalNumber } from '../../core/validation';

/**
 * A budget in a body (create, edit, propose): either limit or both. The object replaces the whole
 * budget: a limit it leaves out is no limit of that kind.
 */
export class BudgetInputDto {
  @OptionalInt({
    description:
      'Tokens (input + output, as the provider reports them) its RD runs may use; null or absent: no token limit',
    max: LIMITS.budgetMaxTokens,
    min: 1,
    nullable: true,
  })
  maxTokens?: number | null;

  @OptionalNumber({
    description: 'US dollars its RD runs may cost, where the provider reports a cost; null or absent: no cost limit',
    max: LIMITS.budgetMaxCostUsd,
    min: 0.01,
    nullable: true,
  })
  maxCostUsd?: number | null;
}

/** Decorators of a `budget` in a body; null is "no budget". */
export function BudgetField(description: string) {
  return (target: object, property: string) => {
    ApiPropertyOptional({ description, nullable: true, type: BudgetInputDto })(target, property);
    ValidateIf((_o, v) => v !== undefined && v !== null)(target, property);
    IsObject()(target, property);
    ValidateNested()(target, property);
    Type(() => BudgetInputDto)(target, property);
  };
}

export class RequirementBudgetResponseDto implements RequirementBudget {
  @ApiProperty({ description: 'Token limit, or null for none', nullable: true, type: Number }) maxTokens!:
    number | null;
  @ApiProperty({ description: 'Cost limit in US dollars, or null for none', nullable: true, type: Number })
  maxCostUsd!: number | null;
}

export class RequirementUsageResponseDto implements RequirementUsage {
  @ApiProperty({ description: 'Input tokens of its RD runs, as reported (cache reads included)' }) inputTokens!: number;
  @ApiProperty({ description: 'Output tokens of its RD runs, as reported' }) outputTokens!: number;
  @ApiProperty({
    description: 'US dollars, over the runs whose provider reported a cost; null when none did',
    nullable: true,
    type: Number,
  })
  costUsd!: number | null;
}
