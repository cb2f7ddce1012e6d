import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsInt, IsOptional, Max, Min } from 'class-validator';

import { FORGES, type Forge } from '@libs/contracts';

import { OptionalEnum, OptionalText } from '../../core/validation';
import { CreateRequirementDto } from '../../requirements/dto/create-requirement.dto';
import { RequirementResponseDto } from '../../requirements/dto/requirement-response.dto';

/** Issues imported by one request, at most. */
export const IMPORT_MAX_ISSUES = 20;

/**
 * Issues to import (issue 49 §1): one issue's web address, or a repository and numbers; the rest
 * is what creating a Requirement takes besides its title and description (the issue gives those).
 */
export class ImportIssuesDto extends OmitType(CreateRequirementDto, ['title', 'description'] as const) {
  @OptionalText({
    description:
      "An issue's web address (https://github.com/OWNER/REPO/issues/12, https://gitlab.com/GROUP/PROJECT/-/issues/12); or repository and numbers",
    max: 2000,
    min: 1,
  })
  url?: string;

  @OptionalText({
    description: 'OWNER/REPO (GitLab: the project’s path), one of the workspace’s remotes (with numbers)',
    max: 255,
    min: 3,
    pattern: /^[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+){1,20}$/,
  })
  repository?: string;

  @OptionalEnum(
    FORGES,
    'With repository: its forge, when the same path is a remote on both (default: the one remote that has it)',
  )
  forge?: Forge;

  @ApiPropertyOptional({
    description: `Issue numbers in repository, 1 to ${IMPORT_MAX_ISSUES}`,
    maxItems: IMPORT_MAX_ISSUES,
    minItems: 1,
    type: [Number],
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(IMPORT_MAX_ISSUES)
  @IsInt({ each: true })
  @Min(1, { each: true })
  @Max(2_147_483_647, { each: true })
  numbers?: number[];

  @ApiPropertyOptional({
    description: "Start each one's agent at once (as POST /requirements/:id/start); false when absent",
  })
  @IsOptional()
  @IsBoolean()
  start?: boolean;
}

export class NotStartedDto {
  @ApiProperty() requirementId!: string;
  @ApiProperty({ description: 'Why its start was refused (it stays in todo)' }) reason!: string;
}

export class ImportedRequirementsDto {
  @ApiProperty({ description: 'The Requirements made, in the order asked', type: [RequirementResponseDto] })
  items!: RequirementResponseDto[];
  @ApiProperty({
    description: 'With start: the ones whose start was refused (a dependency not met, a budget)',
    type: [NotStartedDto],
  })
  notStarted!: NotStartedDto[];
}
