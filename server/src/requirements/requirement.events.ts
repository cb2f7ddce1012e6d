import type { EventActor, ManagerEventPayloads } from '@libs/contracts';

import type { UnitOfWork } from '../core/database/unit-of-work';
import type { RequirementResponseDto } from './dto/requirement-response.dto';
import type { UpdateRequirementDto } from './dto/update-requirement.dto';
import type { RequirementEntity } from './requirement.entity';
import type { RequirementRows } from './requirements.repository';
import type { NewRequirement } from './new-requirement';

/** What closing handlers add to the terminal event's payload (the timers that ended with it). */
export type ClosedExtras = Omit<ManagerEventPayloads['requirement.completed'], 'requirement'>;

/** Stages a feature's rows for a Requirement in its creating unit (see `requirement.creating`). */
export type CreatingStager = (tx: UnitOfWork, requirement: RequirementEntity) => void;

/** The Requirement aggregate's domain events (see core/domain-events.ts). */
declare module '../core/domain-events' {
  interface DomainEventMap {
    /**
     * A Requirement is about to be created, before the write unit: a handler may refuse the input
     * (a domain error) and may take a moment (asking git); what it returns stages its rows in the
     * creating unit and sets what the snapshot shows (the worktree's place).
     */
    'requirement.creating': { args: [input: NewRequirement]; returns: CreatingStager; delivery: 'inOrder' };
    /** Inside the creating unit, both rows staged and before the created event: dependencies are checked and staged. */
    'requirement.created': {
      args: [tx: UnitOfWork, rows: RequirementRows, input: NewRequirement];
      returns: void;
      delivery: 'inOrder';
    };
    /**
     * Inside the unit that makes a Requirement done or cancelled: timers end, dependents learn it.
     * What the handlers return is added to the terminal event's payload.
     */
    'requirement.closing': {
      args: [tx: UnitOfWork, requirementId: string, now: string];
      returns: ClosedExtras;
      delivery: 'inOrder';
    };
    /**
     * A person's edit committed (a raised budget resumes the session), handled in the handler's
     * own units; a snapshot it returns is the edit's answer (the newer state).
     */
    'requirement.edited': {
      args: [id: string, fields: UpdateRequirementDto, actor: EventActor];
      returns: RequirementResponseDto | null;
      delivery: 'inOrder';
    };
  }
}
