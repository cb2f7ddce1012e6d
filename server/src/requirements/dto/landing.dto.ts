import { ApiProperty } from '@nestjs/swagger';

import { LAND_METHODS, LandMethod, RequirementConflict, RequirementLanding } from '@libs/contracts';

import type { RequirementLandingEntity } from '../requirement-landing.entity';

export class RequirementConflictResponseDto implements RequirementConflict {
  @ApiProperty() requirementId!: string;
  @ApiProperty() title!: string;
  @ApiProperty({ type: [String] }) paths!: string[];
}

/**
 * A Requirement's landing, as its snapshot shows it. The row is the landing feature's to write;
 * its shape lives with the aggregate that shows it in every snapshot.
 */
export class RequirementLandingResponseDto implements RequirementLanding {
  @ApiProperty({
    description:
      "Its work (commits, and uncommitted changes in its worktree) merges onto the base's current commit without a conflict; null when not checked",
    nullable: true,
    type: Boolean,
  })
  mergesCleanly!: boolean | null;
  @ApiProperty({ description: 'Files that conflict with the base', type: [String] }) conflictPaths!: string[];
  @ApiProperty({
    description: 'Other live Requirements it conflicts with, as if both landed on the base now',
    type: [RequirementConflictResponseDto],
  })
  conflictsWith!: RequirementConflictResponseDto[];
  @ApiProperty({ description: 'Commits on the base its branch lacks', nullable: true, type: Number }) behindBy!:
    number | null;
  @ApiProperty({ description: 'The base commit the answer is for', nullable: true, type: String }) baseSha!:
    string | null;
  @ApiProperty({
    description: 'The work commit the answer is for (a snapshot commit when the worktree had uncommitted changes)',
    nullable: true,
    type: String,
  })
  headSha!: string | null;
  @ApiProperty({ nullable: true, type: String }) checkedAt!: string | null;
  @ApiProperty({ description: 'When it landed locally (merge, squash or rebase)', nullable: true, type: String })
  landedAt!: string | null;
  @ApiProperty({ enum: LAND_METHODS, nullable: true }) landedMethod!: LandMethod | null;
  @ApiProperty({ description: "The base's commit that holds the landed work", nullable: true, type: String })
  landedCommit!: string | null;
  @ApiProperty({
    description:
      "The agent's work as its land left it (its branch after a squash or rebase is the landed commit; after a merge, the head merged): the same work now means nothing new to land",
    nullable: true,
    type: String,
  })
  landedWork!: string | null;
}

export const NOT_CHECKED: RequirementLandingResponseDto = Object.freeze({
  baseSha: null,
  behindBy: null,
  checkedAt: null,
  conflictPaths: [],
  conflictsWith: [],
  headSha: null,
  landedAt: null,
  landedCommit: null,
  landedMethod: null,
  landedWork: null,
  mergesCleanly: null,
});

export function toLandingResponse(row: RequirementLandingEntity | null | undefined): RequirementLandingResponseDto {
  if (!row) {
    return { ...NOT_CHECKED, conflictPaths: [], conflictsWith: [] };
  }
  return {
    baseSha: row.baseSha,
    behindBy: row.behindBy,
    checkedAt: row.checkedAt,
    conflictPaths: row.conflictPaths,
    conflictsWith: row.conflictsWith,
    headSha: row.headSha,
    landedAt: row.landedAt,
    landedCommit: row.landedCommit,
    landedMethod: row.landedMethod,
    landedWork: row.landedWork,
    // SQLite hands booleans back as 0/1.
    mergesCleanly: row.mergesCleanly === null ? null : Boolean(row.mergesCleanly),
  };
}
