import { InitialSchema1764460800000 } from './1764460800000-initial-schema';

/** Every migration, oldest first. New ones are appended; shipped ones are never edited. */
export const MIGRATIONS = [InitialSchema1764460800000];
