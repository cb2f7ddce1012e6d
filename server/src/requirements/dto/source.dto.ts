import { ApiProperty } from '@nestjs/swagger';

import { FORGES, type Forge, type RequirementSource } from '@libs/contracts';

export class RequirementSourceDto implements RequirementSource {
  @ApiProperty({ enum: FORGES }) forge!: Forge;
  @ApiProperty({ description: "owner/repo; GitLab: the project's full path" }) repository!: string;
  @ApiProperty() number!: number;
  @ApiProperty({ description: "The issue's web page" }) url!: string;
  @ApiProperty({ description: "The issue's title at the import" }) title!: string;
  @ApiProperty({ type: [String] }) labels!: string[];
  @ApiProperty({ description: "Its author's login (null: a deleted account)", nullable: true, type: String })
  author!: string | null;
  @ApiProperty({ description: 'Its state at the import', enum: ['open', 'closed'] }) state!: 'open' | 'closed';
  @ApiProperty() importedAt!: string;
}

/** The stored JSON as the API shows it; a row that does not parse shows none (it is only a record). */
export function toSourceResponse(stored: string | null): RequirementSourceDto | null {
  if (stored === null) {
    return null;
  }
  try {
    return JSON.parse(stored) as RequirementSourceDto;
  } catch {
    return null;
  }
}
