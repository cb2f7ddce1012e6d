import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Matches } from 'class-validator';

export class AttentionQueryDto {
  @ApiPropertyOptional({
    description: "`me`: only the items of the person asking; a person's id (`person_…`): only theirs",
    example: 'me',
  })
  @IsOptional()
  @Matches(/^(me|person_[0-9a-f]{24})$/, { message: 'person must be "me" or a person id (person_…)' })
  person?: string;
}
