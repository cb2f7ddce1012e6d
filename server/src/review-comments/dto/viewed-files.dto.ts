import { ApiProperty } from '@nestjs/swagger';
import { IsBoolean } from 'class-validator';

import { ViewedFile, ViewedFiles } from '@libs/contracts';

import { ValidateText } from '../../core/validation';

export class MarkViewedDto {
  @ValidateText({ description: "A changed file's path, as the Changes list names it", max: 4096, min: 1 })
  path!: string;

  @ApiProperty({ description: 'Viewed (true) or not (false)' })
  @IsBoolean()
  viewed!: boolean;
}

export class ViewedFileDto implements ViewedFile {
  @ApiProperty() path!: string;
  @ApiProperty({ description: 'Marked viewed, and unchanged since' }) viewed!: boolean;
  @ApiProperty({ description: 'When it was marked viewed (also when it changed since)', nullable: true, type: String })
  viewedAt!: string | null;
}

export class ViewedFilesDto implements ViewedFiles {
  @ApiProperty({ description: 'The agent work the files are listed from' }) workSha!: string;
  @ApiProperty({ type: [ViewedFileDto] }) items!: ViewedFileDto[];
  @ApiProperty() viewedCount!: number;
  @ApiProperty() fileCount!: number;
}
