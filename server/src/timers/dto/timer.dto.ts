import { ApiProperty } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';

import { AgentTimer, LIMITS, TIMER_SCHEDULES, TIMER_STATUSES, TimerSchedule, TimerStatus } from '@libs/contracts';

import { PageInfoDto, PageQueryDto } from '../../core/http/pagination';
import { OptionalEnum, OptionalText, ValidateEnum, ValidateText } from '../../core/validation';
import type { AgentTimerEntity } from '../agent-timer.entity';

export class CreateTimerDto {
  @ValidateText({
    description: 'What the agent should do when woken',
    example: 'Check the CI of PR #184',
    max: LIMITS.timerDescriptionLength,
    min: 1,
    pattern: /\S/,
  })
  description!: string;

  @ValidateEnum(TIMER_SCHEDULES, '`once` fires after intervalSeconds; `recurring` every intervalSeconds')
  schedule!: TimerSchedule;

  @ApiProperty({
    description: 'Seconds until the (next) occurrence',
    example: 3600,
    maximum: LIMITS.timerIntervalMaxSeconds,
    minimum: LIMITS.timerIntervalMinSeconds,
  })
  @IsInt()
  @Min(LIMITS.timerIntervalMinSeconds)
  @Max(LIMITS.timerIntervalMaxSeconds)
  intervalSeconds!: number;
}

export class ListTimersQueryDto extends PageQueryDto {
  @OptionalEnum(TIMER_STATUSES, 'Only timers in this status')
  status?: TimerStatus;

  @OptionalText({ description: 'Only the timers of this Requirement', max: 100 })
  requirementId?: string;
}

export class TimerResponseDto implements AgentTimer {
  @ApiProperty({ example: 'tmr_…' }) id!: string;
  @ApiProperty() requirementId!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ enum: TIMER_SCHEDULES }) schedule!: TimerSchedule;
  @ApiProperty() intervalSeconds!: number;
  @ApiProperty({ enum: TIMER_STATUSES }) status!: TimerStatus;
  @ApiProperty({ description: 'The next occurrence; null once not active', nullable: true, type: String }) nextFireAt!:
    string | null;
  @ApiProperty({ nullable: true, type: String }) lastFiredAt!: string | null;
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;
}

export class TimerPageDto extends PageInfoDto {
  @ApiProperty({ type: [TimerResponseDto] }) items!: TimerResponseDto[];
}

export function toTimerResponse(entity: AgentTimerEntity): TimerResponseDto {
  return {
    createdAt: entity.createdAt,
    description: entity.description,
    id: entity.id,
    intervalSeconds: entity.intervalSeconds,
    lastFiredAt: entity.lastFiredAt,
    nextFireAt: entity.nextFireAt,
    requirementId: entity.requirementId,
    schedule: entity.schedule,
    status: entity.status,
    updatedAt: entity.updatedAt,
  };
}
