import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, ValidateIf, ValidateNested } from 'class-validator';

import {
  DEPENDENCY_CONDITIONS,
  DEPENDENCY_STATES,
  DependencyCondition,
  DependencyState,
  LIMITS,
  RequirementDependency,
} from '@libs/contracts';

import { ValidateEnum, ValidateText } from '../../core/validation';
import type { RequirementDependencyEntity } from '../requirement-dependency.entity';

export class DependencyInputDto {
  @ValidateText({ description: 'The Requirement to wait for', example: 'req_…', max: 100, min: 1 })
  requirementId!: string;

  @ValidateEnum(
    DEPENDENCY_CONDITIONS,
    'Met when that Requirement is confirmed done, or when every pull request of it is merged',
  )
  until!: DependencyCondition;
}

/** Decorators of a `dependsOn` list in a body (create, propose, PUT …/dependencies). */
export function DependsOnList(required: boolean) {
  return (target: object, property: string) => {
    (required ? ApiProperty : ApiPropertyOptional)({
      description: 'Requirements this one waits for (no cycles)',
      maxItems: LIMITS.dependencies,
      type: [DependencyInputDto],
    })(target, property);
    if (!required) {
      ValidateIf((_o, v) => v !== undefined)(target, property);
    }
    IsArray()(target, property);
    ArrayMaxSize(LIMITS.dependencies)(target, property);
    ValidateNested({ each: true })(target, property);
    Type(() => DependencyInputDto)(target, property);
  };
}

/** `autoStart` in a body. */
export function AutoStartFlag() {
  return (target: object, property: string) => {
    ApiPropertyOptional({
      description: 'Start on its own once every dependency is met (instead of waiting for a start); false when absent',
    })(target, property);
    ValidateIf((_o, v) => v !== undefined)(target, property);
    IsBoolean()(target, property);
  };
}

/** PUT /requirements/:id/dependencies: the whole list, replacing what was there. */
export class SetDependenciesDto {
  @DependsOnList(true)
  dependsOn!: DependencyInputDto[];

  @AutoStartFlag()
  autoStart?: boolean;
}

export class RequirementDependencyResponseDto implements RequirementDependency {
  @ApiProperty({ description: 'The Requirement waited for' }) requirementId!: string;
  @ApiProperty({ enum: DEPENDENCY_CONDITIONS }) until!: DependencyCondition;
  @ApiProperty({
    description: 'pending until met; cancelled when that Requirement was withdrawn',
    enum: DEPENDENCY_STATES,
  })
  state!: DependencyState;
  @ApiProperty({
    description: 'How it was met or ended (e.g. "Org/Repo#4 merged as 1a2b…")',
    nullable: true,
    type: String,
  })
  reason!: string | null;
  @ApiProperty({ nullable: true, type: String }) resolvedAt!: string | null;
}

export function toDependencyResponse(row: RequirementDependencyEntity): RequirementDependencyResponseDto {
  return {
    reason: row.reason,
    requirementId: row.dependsOnRequirementId,
    resolvedAt: row.resolvedAt,
    state: row.state,
    until: row.until,
  };
}
