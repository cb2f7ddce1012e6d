import { InjectionToken } from '@angular/core';

import { LiveState } from '../live/live-state';

/**
 * The one LiveState every store merges into: events (through LiveSync), snapshots and the
 * resources mutations answer with all go through its rules, so a purge's tombstone or a newer
 * event wins no matter which store's read lands late. Each store publishes only its own part.
 */
export const LIVE_STATE = new InjectionToken<LiveState>('LIVE_STATE', {
  factory: () => new LiveState(),
  providedIn: 'root',
});
