import { ApiProperty } from '@nestjs/swagger';

import { PREVIEW_STATES, type Preview, type PreviewOutput, type PreviewState } from '@libs/contracts';

export class PreviewPortsDto {
  @ApiProperty({ description: 'AGENT_MANAGER_PORT', example: 4400 }) first!: number;
  @ApiProperty({ example: 10 }) count!: number;
}

export class PreviewDto implements Preview {
  @ApiProperty() requirementId!: string;
  @ApiProperty({ enum: PREVIEW_STATES }) state!: PreviewState;
  @ApiProperty({
    description: 'http://127.0.0.1:<first port><previewPath> while it runs',
    nullable: true,
    type: String,
  })
  url!: string | null;
  @ApiProperty({ description: "The Requirement's reserved ports", nullable: true, type: PreviewPortsDto })
  ports!: PreviewPortsDto | null;
  @ApiProperty({ description: 'Its first process, while it runs', nullable: true, type: Number }) pid!: number | null;
  @ApiProperty({ description: 'The configured runCommand, or .agent-manager/run', nullable: true, type: String })
  command!: string | null;
  @ApiProperty({ nullable: true, type: String }) startedAt!: string | null;
  @ApiProperty({ nullable: true, type: String }) endedAt!: string | null;
  @ApiProperty({ description: 'Its exit code when it exited by itself', nullable: true, type: Number })
  exitCode!: number | null;
  @ApiProperty({
    description:
      'Why it is not running, in one line (exited, a port held by another program, stopped for another preview)',
    nullable: true,
    type: String,
  })
  reason!: string | null;
  @ApiProperty({ description: 'Its last output lines (at most 20)', type: [String] }) lastLines!: string[];
}

export class PreviewOutputDto implements PreviewOutput {
  @ApiProperty() requirementId!: string;
  @ApiProperty({ description: 'Its last output lines (at most 5,000), oldest first', type: [String] }) lines!: string[];
  @ApiProperty({ description: 'Lines before these that are no longer kept' }) dropped!: number;
}
