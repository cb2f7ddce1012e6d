import type { UnitOfWork } from './unit-of-work';

/**
 * The name services knew the unit of work by before wave 2; kept so that they compile while
 * they move onto repositories. New code takes a `UnitOfWork`.
 */
export type WriteTx = UnitOfWork;
