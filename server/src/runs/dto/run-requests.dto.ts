import { INTERRUPT_MODES, InterruptMode } from '@libs/contracts';

import { PageQueryDto } from '../../core/http/pagination';
import { OptionalEnum, OptionalText } from '../../core/validation';

export { ReplyDto as StartDto } from '../../messages/dto/reply.dto';

export class InterruptDto {
  @OptionalEnum(
    INTERRUPT_MODES,
    'stop: pause on purpose; steer: only if newer input is queued, which the next run then takes (default stop)',
  )
  mode?: InterruptMode;
}

export class ListRunsQueryDto extends PageQueryDto {
  @OptionalText({ description: 'Only the runs of this Requirement', max: 100 })
  requirementId?: string;
}
