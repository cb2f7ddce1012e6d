import type { LandingQueueItem, Requirement } from '@libs/contracts';

import { AttentionFacts, asks, attentionFindings } from './attention-rules';

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:00:01.000Z';

function requirement(set: Partial<Requirement> = {}, session: Partial<Requirement['session']> = {}): Requirement {
  return {
    attention: [],
    autoReview: null,
    baseRef: 'main',
    budget: null,
    budgetReachedAt: null,
    completedAt: null,
    createdAt: T0,
    createdBy: 'human',
    description: '',
    forkedFromRequirementId: null,
    id: 'req_a',
    isolation: 'worktree',
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
    source: null,
    session: {
      createdAt: T0,
      id: 'ses_a',
      lastConsumedMessageSequence: 2,
      lastError: null,
      lastMessageSequence: 2,
      nativeSessionId: null,
      pausedAt: null,
      pendingMessageCount: 0,
      provider: 'codex',
      requirementId: 'req_a',
      state: 'waiting_human',
      updatedAt: T1,
      ...session,
    },
    sourceSessionId: null,
    status: 'waiting_confirmation',
    title: 'A',
    treeUsage: { costUsd: null, inputTokens: 0, outputTokens: 0 },
    updatedAt: T1,
    usage: { costUsd: null, inputTokens: 0, outputTokens: 0 },
    worktree: null,
    ...set,
  };
}

const facts = (r: Requirement, more: Partial<AttentionFacts> = {}): AttentionFacts => ({
  lastAgentMessage: null,
  lastCiFailure: null,
  queueItem: null,
  refused: [],
  requirement: r,
  ...more,
});
const reasons = (f: AttentionFacts) => attentionFindings(f).map((x) => x.reason);

const queued = (set: Partial<LandingQueueItem>): LandingQueueItem => ({
  addedAt: T0,
  conflictPaths: [],
  expectedHead: null,
  method: 'squash',
  position: 1,
  reason: null,
  requirementId: 'req_a',
  state: 'queued',
  title: 'A',
  ...set,
});

describe('attentionFindings', () => {
  it('finds nothing on a Requirement that is done, cancelled, new or at work', () => {
    expect(reasons(facts(requirement({ status: 'done' })))).toEqual([]);
    expect(reasons(facts(requirement({ status: 'cancelled' }, { state: 'failed' })))).toEqual([]);
    expect(reasons(facts(requirement({ status: 'todo' }, { state: 'idle' })))).toEqual([]);
    expect(reasons(facts(requirement({ status: 'doing' }, { state: 'running' })))).toEqual([]);
  });

  it('reads the rest after a run as exactly one of a question, work to review, or an answer to confirm', () => {
    const asked = facts(requirement(), { lastAgentMessage: { body: 'Done a.\n\nShould I also do b?', createdAt: T1 } });
    expect(attentionFindings(asked)).toEqual([{ reason: 'waiting_reply', since: T1, summary: 'Should I also do b?' }]);
    const worktree = {
      ahead: 2,
      baseRef: 'main',
      baseSha: 'b',
      behind: 0,
      branch: 'am/a',
      dirty: false,
      headSha: 'h',
      importError: null,
      layout: 'own_repository' as const,
      mode: 'worktree' as const,
      path: '/w',
      ports: null,
      refreshedAt: T1,
      removedAt: null,
      workSha: 'h',
    };
    const work = facts(requirement({ worktree }), { lastAgentMessage: { body: 'Done.', createdAt: T1 } });
    expect(reasons(work)).toEqual(['review_ready']);
    // Once that work landed, there is nothing to review: confirm it.
    const landed = requirement({ worktree });
    landed.landing.landedWork = 'h';
    expect(reasons(facts(landed, { lastAgentMessage: { body: 'Done.', createdAt: T1 } }))).toEqual(['confirm_done']);
    expect(reasons(facts(requirement()))).toEqual(['confirm_done']);
    // Paused with input waiting: a start goes on.
    const paused = attentionFindings(facts(requirement({}, { pausedAt: T1, pendingMessageCount: 2 })));
    expect(paused).toEqual([expect.objectContaining({ reason: 'confirm_done', since: T1 })]);
  });

  it('names a failed run, a reached budget (not also the failure it caused), a cancelled dependency and an offline runner', () => {
    expect(attentionFindings(facts(requirement({}, { lastError: 'exit 3\nstack', state: 'failed' })))).toEqual([
      { reason: 'run_failed', since: T1, summary: 'Its run failed: exit 3 stack' },
    ]);
    expect(reasons(facts(requirement({ budgetReachedAt: T0 }, { state: 'failed' })))).toEqual(['budget_reached']);
    const waiting = requirement(
      {
        dependsOn: [{ reason: 'cancelled', requirementId: 'req_b', resolvedAt: T0, state: 'cancelled', until: 'done' }],
        status: 'todo',
      },
      { state: 'idle' },
    );
    expect(attentionFindings(facts(waiting))).toEqual([
      { reason: 'dependency_cancelled', since: T0, summary: 'It waits for req_b, which was cancelled.' },
    ]);
    const offline = requirement(
      { runner: { host: 'box', id: 'rnr_1', online: false, person: 'Ada' }, status: 'doing' },
      { state: 'running' },
    );
    expect(reasons(facts(offline))).toEqual(['runner_offline']);
  });

  it('names a conflict with the base or another agent, and what stops the merge queue', () => {
    const base = requirement();
    base.landing = {
      ...base.landing,
      checkedAt: T0,
      conflictPaths: ['a.ts', 'b.ts', 'c.ts', 'd.ts'],
      mergesCleanly: false,
    };
    expect(attentionFindings(facts(base)).find((f) => f.reason === 'conflict')).toEqual({
      reason: 'conflict',
      since: T0,
      summary: 'Its work conflicts with main in a.ts, b.ts, c.ts and 1 more.',
    });
    const pair = requirement();
    pair.landing = {
      ...pair.landing,
      conflictsWith: [{ paths: ['x'], requirementId: 'req_b', title: 'B' }],
      mergesCleanly: true,
    };
    expect(reasons(facts(pair))).toContain('conflict');

    const blocked = reasons(
      facts(requirement(), { queueItem: queued({ conflictPaths: ['x'], reason: 'conflict', state: 'paused' }) }),
    );
    expect(blocked).toContain('queue_blocked');
    const refused = attentionFindings(
      facts(requirement(), { queueItem: queued({ reason: 'the base checkout has changes', state: 'paused' }) }),
    );
    expect(refused.find((f) => f.reason === 'land_refused')?.summary).toBe(
      'The merge queue could not land it: the base checkout has changes',
    );
    expect(reasons(facts(requirement(), { queueItem: queued({}) }))).toEqual(['confirm_done']);
  });

  it('names a CI failure no run has taken yet, and hosts still refused, only while no run is at work', () => {
    const ci = { body: 'GitHub CI: "test" failed on #4.', createdAt: T1, sequence: 3 };
    expect(reasons(facts(requirement({}, { lastMessageSequence: 3 }), { lastCiFailure: ci }))).toContain('ci_failed');
    // A successful run consumed it: the agent answered it.
    expect(reasons(facts(requirement({}, { lastConsumedMessageSequence: 3 }), { lastCiFailure: ci }))).not.toContain(
      'ci_failed',
    );
    expect(reasons(facts(requirement({ status: 'doing' }, { state: 'running' }), { lastCiFailure: ci }))).toEqual([]);

    const refused = [
      { count: 3, firstAt: T1, host: 'b.example', port: 443 },
      { count: 1, firstAt: T0, host: '::1', port: 80 },
    ];
    expect(attentionFindings(facts(requirement(), { refused })).find((f) => f.reason === 'network_blocked')).toEqual({
      reason: 'network_blocked',
      since: T0,
      summary: 'Its run was refused b.example:443, [::1]:80: allow a host if it needs it.',
    });
    expect(reasons(facts(requirement({ status: 'doing' }, { state: 'running' }), { refused }))).toEqual([]);
  });

  it('keeps summaries to one plain line, whatever the agent wrote', () => {
    const body = 'Which one\u001b[31m, red\u001b[0m or \u202eblue\u0007?';
    const [finding] = attentionFindings(facts(requirement(), { lastAgentMessage: { body, createdAt: T1 } }));
    expect(finding.summary).toBe('Which one, red or blue ?');
  });

  it('reads a question at the end of the last line, through closing marks', () => {
    expect(asks('Shall I?')).toBe(true);
    expect(asks('**Which one?**\n')).toBe(true);
    expect(asks('Is it "a?"')).toBe(true);
    expect(asks('Why? Because.\n\nDone.')).toBe(false);
    expect(asks('')).toBe(false);
  });
});
