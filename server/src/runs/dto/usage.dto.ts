import { ApiProperty } from '@nestjs/swagger';
import { IsISO8601, ValidateIf } from 'class-validator';

import { OptionalText } from '../../core/validation';

export class UsageQueryDto {
  /** Only runs started at or after this time (ISO 8601; the dashboard sends its local midnight, or the start of its week). */
  @ValidateIf((_o, v) => v !== undefined)
  @IsISO8601({ strict: true })
  @ApiProperty({
    description: 'Only runs started at or after this time (ISO 8601)',
    example: '2026-12-01T00:00:00.000Z',
    required: false,
    type: String,
  })
  since?: string;

  @OptionalText({ description: 'Only the runs of this Requirement (RD and reviewer)', max: 100 })
  requirementId?: string;
}

/** Token and cost totals over the runs a query selects (finished and running ones alike). */
export class UsageResponseDto {
  @ApiProperty({ description: 'The runs counted' }) runs!: number;
  @ApiProperty({ description: 'Input tokens, cache reads included' }) inputTokens!: number;
  @ApiProperty({ description: 'The part of the input read from the cache' }) cachedInputTokens!: number;
  @ApiProperty() outputTokens!: number;
  @ApiProperty({
    description: 'US dollars over the runs whose provider reported a cost; null when none did',
    nullable: true,
    type: Number,
  })
  costUsd!: number | null;
  @ApiProperty({ description: 'How many of the runs reported a cost (Codex does not): the cost covers only these' })
  costReportedRuns!: number;
}
