import { randomUUID } from 'node:crypto';

export const ID_PREFIXES = {
  attachment: 'att',
  attention: 'atn',
  checkpoint: 'ckp',
  delivery: 'dlv',
  device: 'dev',
  message: 'msg',
  networkBlocked: 'nbl',
  pairing: 'pair',
  pullRequest: 'pr',
  requirement: 'req',
  review: 'rev',
  reviewComment: 'rvc',
  reviewReply: 'rvr',
  run: 'run',
  session: 'ses',
  timer: 'tmr',
  trace: 'trc',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${randomUUID()}`;
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/** True when `value` has the shape of an ID of `kind` (used to answer 404 without a query). */
export function isId(kind: IdKind, value: unknown): value is string {
  return typeof value === 'string' && new RegExp(`^${ID_PREFIXES[kind]}_${UUID}$`).test(value);
}
