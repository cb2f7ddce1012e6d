import type { RequirementCreator } from '@libs/contracts';

import type { CreateRequirementDto } from './dto/create-requirement.dto';

/** What creating a Requirement takes: the request, who asks, and where in a tree it goes. */
export interface NewRequirement extends CreateRequirementDto {
  createdBy: RequirementCreator;
  forkedFromRequirementId?: string | null;
  parentRequirementId?: string | null;
  sourceSessionId?: string | null;
}
