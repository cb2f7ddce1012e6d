import { eventBuilder, message, requirement, run } from '../../../testing/builders';
import type { Message, Requirement, Trace } from '../api-types';
import { LiveState } from './live-state';
import { EventCursor, SequencedLog, VersionedMap } from './merge';

// The merge rules the dashboard relies on when JSON snapshots and SSE events race each other.

const event = eventBuilder('2026-01-01T00:00:09.000Z');

describe(VersionedMap.name, () => {
  it('keeps an event that is newer than a snapshot which lands late', () => {
    const sut = new VersionedMap<Requirement>((r) => r.updatedAt);
    sut.upsert(requirement('req_a', '2026-01-01T00:00:05.000Z', 'doing'), 'event');
    const changed = sut.upsertMany([requirement('req_a', '2026-01-01T00:00:01.000Z', 'todo')], 'snapshot');
    expect(changed).toBe(false);
    expect(sut.get('req_a')?.status).toBe('doing');
  });

  it('takes a snapshot that is newer than what it holds', () => {
    const sut = new VersionedMap<Requirement>((r) => r.updatedAt);
    sut.upsert(requirement('req_a', '2026-01-01T00:00:01.000Z', 'todo'), 'event');
    expect(sut.upsertMany([requirement('req_a', '2026-01-01T00:00:02.000Z', 'doing')], 'snapshot')).toBe(true);
    expect(sut.get('req_a')?.status).toBe('doing');
  });

  it('applies consecutive events with the same update time in arrival order', () => {
    const sut = new VersionedMap<Requirement>((r) => r.updatedAt);
    sut.upsert(requirement('req_a', '2026-01-01T00:00:01.000Z', 'todo'), 'event');
    sut.upsert(requirement('req_a', '2026-01-01T00:00:01.000Z', 'doing'), 'event');
    expect(sut.get('req_a')?.status).toBe('doing');
  });

  it("keeps an event over a mutation's answer of the same millisecond that lands after it", () => {
    // A start whose agent fails at once: run.failed overtakes the start's 202 (doing/running).
    const sut = new VersionedMap<Requirement>((r) => r.updatedAt);
    sut.upsert(requirement('req_a', '2026-01-01T00:00:01.000Z', 'doing'), 'event');
    sut.upsert(requirement('req_a', '2026-01-01T00:00:01.000Z', 'waiting_confirmation'), 'event');
    expect(sut.upsert(requirement('req_a', '2026-01-01T00:00:01.000Z', 'doing'), 'snapshot')).toBe(false);
    expect(sut.get('req_a')?.status).toBe('waiting_confirmation');
  });

  it('never resurrects a removed resource from a late snapshot or a stale event', () => {
    const sut = new VersionedMap<Requirement>((r) => r.updatedAt);
    sut.upsert(requirement('req_a', '2026-01-01T00:00:01.000Z'), 'event');
    expect(sut.remove('req_a', '2026-01-01T00:00:03.000Z')).toBe(true);
    expect(sut.upsertMany([requirement('req_a', '2026-01-01T00:00:01.000Z')], 'snapshot')).toBe(false);
    expect(sut.upsert(requirement('req_a', '2026-01-01T00:00:02.000Z'), 'event')).toBe(false);
    expect(sut.get('req_a')).toBeUndefined();
    expect(sut.isRemoved('req_a')).toBe(true);
  });

  it('publishes a new Map on change and the same one otherwise', () => {
    const sut = new VersionedMap<Requirement>((r) => r.updatedAt);
    const before = sut.items;
    sut.upsert(requirement('req_a', '2026-01-01T00:00:01.000Z'), 'event');
    const after = sut.items;
    expect(after).not.toBe(before);
    sut.upsertMany([requirement('req_a', '2026-01-01T00:00:01.000Z')], 'snapshot');
    expect(sut.items).toBe(after);
  });
});

describe(SequencedLog.name, () => {
  it('deduplicates by ID and keeps sequence order when a page arrives after live messages', () => {
    const sut = new SequencedLog<Message>((a, b) => a.sequence - b.sequence);
    sut.add([message('req_a', 3), message('req_a', 4)]); // live, during the load
    expect(sut.add([message('req_a', 1), message('req_a', 2), message('req_a', 3)])).toBe(2); // the page
    expect(sut.items.map((m) => m.sequence)).toEqual([1, 2, 3, 4]);
    expect(sut.add([message('req_a', 4)])).toBe(0);
  });
});

describe(EventCursor.name, () => {
  it('resumes after the last event and drops replayed duplicates', () => {
    const sut = new EventCursor();
    expect(sut.url('/api/events')).toBe('/api/events');
    expect(sut.accept(5)).toBe(true);
    expect(sut.accept(6)).toBe(true);
    expect(sut.url('/api/events')).toBe('/api/events?after=6');
    // After a reconnect the server replays from the cursor; anything at or below it is a duplicate.
    expect(sut.accept(6)).toBe(false);
    expect(sut.accept(4)).toBe(false);
    expect(sut.accept(7)).toBe(true);
    expect(sut.lastEventId).toBe(7);
  });
});

describe(LiveState.name, () => {
  it('merges an event that overtook the snapshot request', () => {
    const sut = new LiveState();
    // The board asked for requirements, then an update arrived on the stream before the answer.
    sut.apply(
      event('requirement.updated', 'req_a', { requirement: requirement('req_a', '2026-01-01T00:00:05.000Z', 'doing') }),
    );
    sut.loadRequirements([
      requirement('req_a', '2026-01-01T00:00:00.000Z', 'todo'),
      requirement('req_b', '2026-01-01T00:00:00.000Z'),
    ]);
    expect(sut.requirements.get('req_a')?.status).toBe('doing');
    expect(sut.requirements.get('req_b')?.status).toBe('todo');
  });

  it('keeps purged Requirements out when the older snapshot lands', () => {
    const sut = new LiveState();
    sut.apply(event('requirements.purged', null, { requirementIds: ['req_gone'] }));
    sut.loadRequirements([requirement('req_gone', '2026-01-01T00:00:00.000Z', 'done')]);
    expect(sut.requirements.get('req_gone')).toBeUndefined();
  });

  it('ignores a payload that belongs to another Requirement than the event', () => {
    const sut = new LiveState();
    const changes = sut.apply(
      event('requirement.updated', 'req_a', { requirement: requirement('req_b', '2026-01-01T00:00:05.000Z') }),
    );
    expect(changes.requirements).toBeUndefined();
    expect(sut.requirements.get('req_b')).toBeUndefined();
  });

  it('appends live messages and traces only to opened conversations, once each', () => {
    const sut = new LiveState();
    sut.conversation('req_a');
    sut.trace('req_a');
    const first = sut.apply(
      event('message.created', 'req_a', {
        message: message('req_a', 1),
        requirement: requirement('req_a', '2026-01-01T00:00:01.000Z'),
      }),
    );
    expect(first.conversations?.has('req_a')).toBe(true);
    expect(
      sut.apply(
        event('message.created', 'req_a', {
          message: message('req_a', 1),
          requirement: requirement('req_a', '2026-01-01T00:00:01.000Z'),
        }),
      ).conversations,
    ).toBeUndefined();
    sut.apply(
      event('message.created', 'req_b', {
        message: message('req_b', 1),
        requirement: requirement('req_b', '2026-01-01T00:00:01.000Z'),
      }),
    );
    expect(sut.conversations.has('req_b')).toBe(false);

    const trace: Trace = {
      createdAt: '2026-01-01T00:00:02.000Z',
      detail: 'ls',
      id: 'trc_1',
      kind: 'tool_call',
      nativeType: null,
      runId: 'run_1',
      sequence: 1,
      status: 'started',
      title: 'ls',
      toolCallId: 'c1',
      toolName: 'shell',
    };
    expect(sut.apply(event('run.trace.appended', 'req_a', { trace })).traces?.has('req_a')).toBe(true);
    expect(sut.trace('req_a').items).toHaveLength(1);
  });

  it('reports a finished run so the dashboard can notify', () => {
    const sut = new LiveState();
    const req = requirement('req_a', '2026-01-01T00:00:03.000Z', 'waiting_confirmation');
    const changes = sut.apply(
      event('run.succeeded', 'req_a', { requirement: req, run: run('run_1', 'req_a', '2026-01-01T00:00:03.000Z') }),
    );
    expect(changes.finishedRun?.id).toBe('run_1');
    // A late `run.started` (older) does not turn it back into a running run.
    sut.apply(event('run.started', 'req_a', { requirement: req, run: run('run_1', 'req_a', null) }));
    expect(sut.runs.get('run_1')?.status).toBe('succeeded');
  });
});
