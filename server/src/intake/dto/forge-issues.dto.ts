import { ApiProperty } from '@nestjs/swagger';

import { FORGES, type Forge } from '@libs/contracts';

import { OptionalEnum, OptionalText } from '../../core/validation';

export const ISSUE_LIST_STATES = ['open', 'closed', 'all'] as const;

export class ListForgeIssuesQueryDto {
  @OptionalText({
    description:
      "OWNER/REPO (GitLab: the project's path), one of the workspace's GitHub or GitLab remotes (default: origin's, else the first)",
    max: 255,
    min: 3,
    pattern: /^[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+){1,20}$/,
  })
  repository?: string;

  @OptionalEnum(FORGES, 'With repository: its forge, when the same path is a remote on both')
  forge?: Forge;

  @OptionalEnum(ISSUE_LIST_STATES, 'open (default), closed or all')
  state?: (typeof ISSUE_LIST_STATES)[number];

  @OptionalText({ description: 'Labels, comma-separated: issues with all of them', max: 500, min: 1 })
  labels?: string;

  @OptionalText({ description: "Words to search for in titles and text (the forge's search)", max: 256, min: 1 })
  q?: string;

  @OptionalText({ description: 'nextCursor of the page before', max: 4, min: 1, pattern: /^[1-9]\d{0,3}$/ })
  cursor?: string;
}

export class ForgeIssueDto {
  @ApiProperty() number!: number;
  @ApiProperty() title!: string;
  @ApiProperty() url!: string;
  @ApiProperty({ type: [String] }) labels!: string[];
  @ApiProperty({ nullable: true, type: String }) author!: string | null;
  @ApiProperty({ enum: ['open', 'closed'] }) state!: 'open' | 'closed';
  @ApiProperty() createdAt!: string;
  @ApiProperty({ description: 'The Requirement it was imported as, or null', nullable: true, type: String })
  importedAs!: string | null;
}

export class ForgeIssuePageDto {
  @ApiProperty({ description: 'OWNER/REPO listed' }) repository!: string;
  @ApiProperty({ enum: FORGES, description: 'Its forge' }) forge!: Forge;
  @ApiProperty({ type: [ForgeIssueDto] }) items!: ForgeIssueDto[];
  @ApiProperty({ description: 'The next page (cursor=), or null', nullable: true, type: String })
  nextCursor!: string | null;
}
