import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';

import type { DoctorArgs, DoctorCheck, DoctorReport, DoctorStatus } from '../doctor-report';

const CHECK_IDS: Array<DoctorCheck['id']> = [
  'node',
  'git',
  'codex',
  'claude',
  'github',
  'isolation',
  'network',
  'environment',
  'worktrees',
  'port',
  'dataDirectory',
  'database',
];
const STATUSES: DoctorStatus[] = ['ok', 'warn', 'fail'];

export class DoctorQueryDto {
  @ApiProperty({
    description: 'Probe again now instead of answering the findings of the last minute',
    enum: ['true', 'false'],
    required: false,
  })
  @IsOptional()
  @IsIn(['true', 'false'])
  refresh?: 'true' | 'false';
}

export class DoctorCheckDto implements DoctorCheck {
  @ApiProperty({ enum: CHECK_IDS }) id!: DoctorCheck['id'];
  @ApiProperty() title!: string;
  @ApiProperty({ description: 'ok: fine; warn: works, with less; fail: what it names does not work', enum: STATUSES })
  status!: DoctorStatus;
  @ApiProperty({ description: 'A failure of a required check keeps Agent Manager from working' }) required!: boolean;
  @ApiProperty() detail!: string;
  @ApiProperty({ description: 'How to fix it; null when there is nothing to fix', nullable: true, type: String }) fix!:
    string | null;
  @ApiProperty({
    description: 'For an agent CLI (codex, claude): whether it is installed and runs (a logged-out CLI is)',
    required: false,
  })
  installed?: boolean;
  @ApiProperty({
    description:
      "What was found, as a stable code (e.g. `git.no_commit`, `cli.not_logged_in`) for a client that writes `detail` and `fix` in the reader's language; unknown codes: show `detail` and `fix`",
    example: 'git.no_commit',
  })
  code!: string;
  @ApiProperty({
    additionalProperties: { oneOf: [{ nullable: true, type: 'string' }, { type: 'number' }, { type: 'boolean' }] },
    description: "The values the finding's text names (paths, versions, the tool's own error text)",
    type: Object,
  })
  args!: DoctorArgs;
}

export class DoctorReportDto implements DoctorReport {
  @ApiProperty({ description: 'False when a required check failed' }) ok!: boolean;
  @ApiProperty({ type: [DoctorCheckDto] }) checks!: DoctorCheckDto[];
  @ApiProperty({ description: 'When these findings were made (ISO 8601)' }) checkedAt!: string;
}
