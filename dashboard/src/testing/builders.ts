// Resource and event builders shared by the dashboard's unit specs (never part of the app build).
import type { ManagerEventOf, ManagerEventPayloads, ManagerEventType } from '@libs/contracts';

import type { Message, Requirement, Run, Timer } from '../app/core/api-types';

export const T0 = '2026-01-01T00:00:00.000Z';
export const T1 = '2026-01-01T00:00:01.000Z';
export const T2 = '2026-01-01T00:00:02.000Z';

export const requirement = (id: string, updatedAt: string, status: Requirement['status'] = 'todo'): Requirement => ({
  attention: [],
  autoReview: null,
  baseRef: null,
  budget: null,
  budgetReachedAt: null,
  completedAt: null,
  createdAt: T0,
  createdBy: 'human',
  description: '',
  forkedFromRequirementId: null,
  id,
  isolation: 'in_place',
  landing: {
    baseSha: null,
    behindBy: null,
    checkedAt: null,
    conflictPaths: [],
    conflictsWith: [],
    headSha: null,
    landedAt: null,
    landedCommit: null,
    landedMethod: null,
    landedWork: null,
    mergesCleanly: null,
  },
  model: null,
  parentRequirementId: null,
  provider: 'codex',
  reasoningEffort: null,
  runner: null,
  session: {
    createdAt: T0,
    id: `ses_${id}`,
    lastConsumedMessageSequence: 0,
    lastError: null,
    lastMessageSequence: 0,
    nativeSessionId: null,
    pausedAt: null,
    pendingMessageCount: 0,
    provider: 'codex',
    requirementId: id,
    state: 'idle',
    updatedAt,
  },
  source: null,
  sourceSessionId: null,
  status,
  title: id,
  treeUsage: { costUsd: null, inputTokens: 0, outputTokens: 0 },
  updatedAt,
  usage: { costUsd: null, inputTokens: 0, outputTokens: 0 },
  worktree: null,
});

export const run = (id: string, requirementId: string, finishedAt: string | null): Run => ({
  cachedInputTokens: null,
  costUsd: null,
  error: null,
  exitCode: null,
  finishedAt,
  id,
  inputFromSequence: null,
  inputToSequence: null,
  inputTokens: null,
  model: null,
  nativeSessionId: null,
  outputTokens: null,
  provider: 'codex',
  reasoningEffort: null,
  reasoningOutputTokens: null,
  requirementId,
  role: 'rd',
  sessionId: `ses_${requirementId}`,
  startedAt: T0,
  status: finishedAt ? 'succeeded' : 'running',
  taskSummary: null,
});

export const timer = (id: string, requirementId: string): Timer => ({
  createdAt: T0,
  description: 'check',
  id,
  intervalSeconds: 60,
  lastFiredAt: null,
  nextFireAt: T1,
  requirementId,
  schedule: 'once',
  status: 'active',
  updatedAt: T0,
});

/** Message `sequence` of a Requirement; its id is derived unless given. */
export const message = (requirementId: string, sequence: number, id = `msg_${requirementId}_${sequence}`): Message => ({
  args: null,
  attachments: [],
  author: 'human',
  authorId: null,
  authorName: null,
  body: `m${sequence}`,
  code: null,
  createdAt: T0,
  deliverToRd: true,
  id,
  metadata: null,
  requirementId,
  runId: null,
  sequence,
  sessionId: `ses_${requirementId}`,
  source: null,
  sourceRequirementId: null,
  triggerId: null,
});

/**
 * Events as the stream hands them on (payloads as the contracts give their type), numbered from 1
 * per builder, stamped `createdAt` unless a call says otherwise.
 */
export function eventBuilder(createdAt: string) {
  let nextId = 1;
  return <T extends ManagerEventType>(
    type: T,
    requirementId: string | null,
    payload: ManagerEventPayloads[T],
    at = createdAt,
  ): ManagerEventOf<T> => ({
    actor: { id: null, kind: 'system' },
    createdAt: at,
    id: nextId++,
    payload,
    requirementId,
    runId: null,
    sessionId: null,
    type,
  });
}
