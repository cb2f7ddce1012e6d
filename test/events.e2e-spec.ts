import { snapshotStore } from './support/db-snapshot';
import { ok } from './support/api';
import { sendUntyped } from './support/http';
import { startInProcess } from './support/in-process';
import { Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { SseConnection, connectSse } from './support/sse-client';

describe('ManagerEvents over SSE', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let requirementId: string;
  const open: SseConnection[] = [];

  const connect = async (query = '', headers: Record<string, string> = {}) => {
    const connection = await connectSse(`${manager.origin}/api/events${query}`, headers);
    open.push(connection);
    return connection;
  };
  const reply = (message: string) =>
    manager.api.POST('/api/requirements/{id}/reply', { params: { path: { id: requirementId } }, body: { message } });
  const lastEventId = async () => (await snapshotStore(manager.dataDirectory())).maxEventId;
  const ids = (connection: SseConnection) => connection.events.map((e) => e.id);
  const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startInProcess({ sandbox });
    const created = await manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'events' } });
    requirementId = created.data!.id;
  });

  afterEach(() => open.splice(0).forEach((c) => c.close()));

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it("answers HEAD with the stream's headers at once instead of holding it open", async () => {
    const started = Date.now();
    // HEAD, Last-Event-ID headers and hand-written queries: untyped on purpose (here and below).
    const res = await sendUntyped(manager.origin, 'HEAD', '/api/events', undefined, { 'Last-Event-ID': '42' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('sends only new events without a cursor, each frame carrying the whole event', async () => {
    const live = await connect();
    expect(live.status).toBe(200);
    const res = await reply('hello');
    const [event] = await live.waitFor(1);
    // The reply also starts a run (run.started follows); the message comes first.
    expect(event).toMatchObject({ event: 'message.created', id: event.data.id });
    expect(event.data).toMatchObject({
      // The person the manager acts for (issue 29): named on every event their requests cause.
      actor: {
        id: expect.stringMatching(/^person_[0-9a-f]{24}$/) as string,
        kind: 'human',
        name: expect.any(String) as string,
      },
      payload: { message: { body: 'hello', id: res.data!.message.id }, requirement: { id: requirementId } },
      requirementId,
      runId: null,
      sessionId: res.data!.requirement.session.id,
      type: 'message.created',
    });
    expect(typeof event.data.createdAt).toBe('string');
  });

  it('gives a live client and two resuming clients every event exactly once, in order, under 200 concurrent writes', async () => {
    const start = await lastEventId();
    const live = await connect();
    const writes = Array.from({ length: 200 }, (_, i) => reply(`burst ${i}`));
    // Resume mid-burst: the replay/live seam falls somewhere inside the burst.
    await live.waitFor(60);
    const byQuery = await connect(`?after=${start}`);
    const byHeader = await connect('', { 'Last-Event-ID': String(start) });
    const statuses = (await Promise.all(writes)).map((r) => r.status);
    expect(statuses).toEqual(Array(200).fill(202));
    for (const client of [live, byQuery, byHeader]) {
      await client.waitFor(200);
    }
    await reply('after the burst');
    for (const client of [live, byQuery, byHeader]) {
      await client.waitFor(201);
      expect(ids(client)).toEqual(range(start + 1, 201));
    }
  });

  it('replays at most 200 events, then ends so the client resumes from its last id', async () => {
    const start = await lastEventId();
    for (let i = 0; i < 5; i++) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => reply(`backlog ${i}.${j}`)));
    }
    const first = await connect(`?after=${start}`);
    await first.ended;
    expect(ids(first)).toEqual(range(start + 1, 200));
    const resumed = await connect(`?after=${start}`, { 'Last-Event-ID': String(start + 200) });
    await resumed.waitFor(50);
    await reply('live again');
    await resumed.waitFor(51);
    expect(ids(resumed)).toEqual(range(start + 201, 51));
  });

  it('takes the larger of after and Last-Event-ID', async () => {
    const start = await lastEventId();
    await reply('one');
    await reply('two');
    const client = await connect(`?after=${start + 1}`, { 'Last-Event-ID': String(start) });
    await client.waitFor(1);
    // A live event after the replay: anything replayed from the smaller cursor would precede it.
    await reply('three');
    await client.waitFor(2);
    expect(ids(client)).toEqual([start + 2, start + 3]);
  });

  it.each(['after=-1', 'after=abc', 'after=1.5'])('refuses a bad cursor (%s) with 400', async (q) => {
    const res = await sendUntyped(manager.origin, 'GET', `/api/events?${q}`);
    expect(res.status).toBe(400);
    expect(res.json.code).toBe('invalid_cursor');
  });

  it('refuses a bad Last-Event-ID with 400', async () => {
    const res = await sendUntyped(manager.origin, 'GET', '/api/events', undefined, { 'Last-Event-ID': 'x' });
    expect(res.status).toBe(400);
  });
});

describe('a slow SSE client', () => {
  it('is dropped once its unsent backlog passes the bound, while the server and other clients carry on', async () => {
    const net = await import('node:net');
    const sandbox = makeSandbox();
    const manager = await startInProcess({ sandbox });
    try {
      const id = (await ok(manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'slow' } }))).id;
      const { port } = new URL(manager.origin);
      const socket = net.connect(Number(port), '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      socket.write(
        `GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${manager.token}\r\n\r\n`,
      );
      socket.pause(); // never reads: the kernel buffers fill, then the server's
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.on('error', () => undefined);
      const body = 'x'.repeat(20_000);
      for (let round = 0; round < 20; round++) {
        await Promise.all(
          Array.from({ length: 25 }, () =>
            manager.api.POST('/api/requirements/{id}/reply', { params: { path: { id } }, body: { message: body } }),
          ),
        );
      }
      // About 20 MB of frames went to a reader that took none: it must have been cut off.
      socket.resume();
      let received = 0;
      socket.on('data', (chunk: Buffer) => (received += chunk.length));
      await closed;
      expect(received).toBeLessThan(20 * 1024 * 1024);
      // The server stays healthy, and other clients still get events.
      const fresh = await connectSse(`${manager.origin}/api/events`);
      await manager.api.POST('/api/requirements/{id}/reply', {
        params: { path: { id } },
        body: { message: 'still here' },
      });
      await fresh.waitFor(1);
      fresh.close();
    } finally {
      await manager.stop();
      sandbox.cleanup();
    }
  });
});
