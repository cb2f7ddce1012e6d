import type { RequirementCreator, RequirementSource } from '@libs/contracts';

import type { CreateRequirementDto } from './dto/create-requirement.dto';

/** What creating a Requirement takes: the request, who asks, and where in a tree it goes. */
export interface NewRequirement extends CreateRequirementDto {
  createdBy: RequirementCreator;
  forkedFromRequirementId?: string | null;
  parentRequirementId?: string | null;
  sourceSessionId?: string | null;
  /** Imported from a forge's issue (issue 49): what it was, and the key that makes a second import a 409. */
  source?: { value: RequirementSource; key: string | null } | null;
}
