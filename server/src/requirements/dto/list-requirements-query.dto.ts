import { REQUIREMENT_STATUSES, RequirementStatus } from '@libs/contracts';

import { PageQueryDto } from '../../core/http/pagination';
import { OptionalEnum } from '../../core/validation';

export class ListRequirementsQueryDto extends PageQueryDto {
  @OptionalEnum(REQUIREMENT_STATUSES, 'Only Requirements in this status')
  status?: RequirementStatus;
}
