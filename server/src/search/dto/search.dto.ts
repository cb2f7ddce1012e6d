import { ApiProperty } from '@nestjs/swagger';

import { REQUIREMENT_STATUSES, RequirementStatus } from '@libs/contracts';

import { PageInfoDto, PageQueryDto } from '../../core/http/pagination';
import { ValidateText } from '../../core/validation';

export const SEARCH_QUERY_MAX = 200;

export class SearchQueryDto extends PageQueryDto {
  @ValidateText({
    description: 'Words to find (all of them; the last may be the start of a word)',
    example: 'flush durations',
    max: SEARCH_QUERY_MAX,
    min: 1,
    pattern: /\S/,
  })
  q!: string;
}

export class SnippetPartDto {
  @ApiProperty() text!: string;
  @ApiProperty({ description: 'This part matched the query' }) match!: boolean;
}

export class SearchHitDto {
  @ApiProperty() requirementId!: string;
  @ApiProperty() requirementTitle!: string;
  @ApiProperty({ enum: REQUIREMENT_STATUSES }) requirementStatus!: RequirementStatus;
  @ApiProperty({
    description: "The message that matched; null when the Requirement's title or description did",
    nullable: true,
    type: String,
  })
  messageId!: string | null;
  @ApiProperty({
    description: "That message's sequence in the conversation (open the conversation there)",
    nullable: true,
    type: Number,
  })
  sequence!: number | null;
  @ApiProperty({ description: 'The matching text around the match, as parts', type: [SnippetPartDto] })
  snippet!: SnippetPartDto[];
}

export class SearchPageDto extends PageInfoDto {
  @ApiProperty({ type: [SearchHitDto] }) items!: SearchHitDto[];
}
