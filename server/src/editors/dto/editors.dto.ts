import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsOptional } from 'class-validator';

import { EDITOR_APPS, Editor, EditorApp } from '@libs/contracts';

export class EditorDto implements Editor {
  @ApiProperty({ enum: EDITOR_APPS }) app!: EditorApp;
  @ApiProperty({ example: 'VS Code' }) label!: string;
  @ApiProperty({ description: 'What runs (the command found on PATH)', example: '/usr/bin/code' }) command!: string;
}

export class EditorListDto {
  @ApiProperty({ type: [EditorDto], description: 'The apps found on this machine (none when asked from elsewhere)' })
  items!: EditorDto[];
  @ApiProperty({ description: 'Whether the asker is at the machine the manager runs on (an editor can open there)' })
  local!: boolean;
}

export class OpenInEditorDto {
  @ApiProperty({ enum: EDITOR_APPS })
  @IsIn(EDITOR_APPS, { message: `app must be one of: ${EDITOR_APPS.join(', ')}` })
  app!: EditorApp;

  @ApiPropertyOptional({
    description:
      'Open even though the working copy holds settings an editor or its git may run (the 409 worktree_untrusted names them)',
  })
  @IsOptional()
  @IsBoolean()
  confirm?: boolean;
}
