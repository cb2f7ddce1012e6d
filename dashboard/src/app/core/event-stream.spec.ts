import { parseEvent } from './event-stream';

// The one place an SSE frame's JSON becomes a ManagerEvent.

const frame = (value: unknown): string => JSON.stringify(value);
const base = {
  actor: { id: null, kind: 'system' },
  createdAt: '2026-01-01T00:00:00.000Z',
  id: 7,
  requirementId: null,
  runId: null,
  sessionId: null,
};

describe(parseEvent.name, () => {
  it('passes an event whose type the contracts know', () => {
    const event = parseEvent(frame({ ...base, payload: { requirementIds: ['req_a'] }, type: 'requirements.purged' }));
    expect(event?.type).toBe('requirements.purged');
    expect(event?.id).toBe(7);
  });

  it('drops a type the contracts do not know, and frames that are not events', () => {
    expect(parseEvent(frame({ ...base, payload: {}, type: 'requirement.exploded' }))).toBeNull();
    expect(parseEvent(frame({ ...base, payload: null, type: 'requirements.purged' }))).toBeNull();
    expect(parseEvent(frame({ ...base, id: '7', payload: {}, type: 'requirements.purged' }))).toBeNull();
    expect(parseEvent(frame(['requirements.purged']))).toBeNull();
    expect(parseEvent('{not json')).toBeNull();
  });
});
