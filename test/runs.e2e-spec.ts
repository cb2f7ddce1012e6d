import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';
import { findRunProcesses } from '@server/agents/process-tree';

import { ok, upload } from './support/api';
import { onPostgres, query } from './support/db-snapshot';
import { sendUntyped } from './support/http';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from './support/model-stub';
import { expectRefused } from './support/refusals';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';

// The run orchestrator end to end with the real, pinned Codex and Claude Code CLIs, driven by
// the scripted model stub on loopback. Everything goes through the HTTP API.

/** A long tool command with a grandchild; not `sleep`, which Claude Code refuses to chain. */
const LONG_JOB = `node -e "setInterval(() => {}, 1000)" am-sleeper-child & node -e "setInterval(() => {}, 1000)" am-sleeper-main`;

const PROVIDERS = REAL_AGENT_CLIS;

jest.setTimeout(90_000);

type Run = Schemas['AgentRunResponseDto'];

describe.each(PROVIDERS)('RD runs with the real $provider CLI', ({ env, executable, provider }) => {
  let sandbox: Sandbox;
  let stub: ModelStub;
  let manager: ManagerProcess;
  let agentEnv: Record<string, string>;

  const start = async () => {
    manager = await startManager({
      env: { ...agentEnv, CODE_FACTORY_CLAUDE_EXECUTABLE: executable, CODE_FACTORY_CODEX_EXECUTABLE: executable },
      sandbox,
    });
  };

  beforeAll(async () => {
    sandbox = makeSandbox();
    stub = await ModelStub.start();
    agentEnv = env(stub, fs.mkdtempSync(path.join('/var/tmp', `am-${provider}-`)));
    await start();
  });

  afterAll(async () => {
    await manager?.stop();
    await stub?.close();
    sandbox?.cleanup();
  });

  const create = (title = 'Add tiered timings') =>
    ok(manager.api.POST('/api/requirements', { body: { description: 'Report the durations.', provider, title } }));
  const runs = async (id: string): Promise<Run[]> =>
    (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: id, limit: 200 } } }))).items;
  const messages = async (id: string) =>
    (await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id }, query: { limit: 200 } } })))
      .items;
  const requirement = (id: string) => ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
  /** Waits until `count` runs exist and none is running. */
  const settled = async (id: string, count = 1, timeoutMs = 60_000): Promise<Run[]> =>
    (
      await until(
        `${count} settled runs`,
        async () => {
          const list = await runs(id);
          return list.length >= count && list.every((r) => r.status !== 'running') && list;
        },
        timeoutMs,
        100,
      )
    ).reverse(); // oldest first
  /**
   * What the manager alone decides (a second start refused, the inactivity watchdog, a stop kept
   * as a pause across a restart) is the same whichever adapter runs: proven once, with the Codex
   * CLI. Everything an adapter does (sessions, traces, tools, attachments, steering, stopping,
   * model errors, a kill -9's orphans, ten runs at once sharing one CLI home) runs on both (issue
   * 50, docs/testing.md).
   */
  const managerIt = (name: string, test: () => Promise<void>) => {
    if (provider === 'codex') {
      it(name, test);
    }
  };
  const runningRun = (id: string): Promise<Run> =>
    until('a running run', async () => (await runs(id)).find((r) => r.status === 'running'), 15_000);

  it('starts, answers into the conversation, waits for confirmation, and resumes the same native session on reply', async () => {
    const req = await create('first conversation');
    stub.scriptFor(req.id, [{ text: 'Timings are in place.' }, { text: 'Flush timings added too.' }]);
    const started = await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `Go ahead ${req.id}` },
    });
    expect(started.status).toBe(202);
    expect(started.data).toMatchObject({
      action: 'start',
      requirement: { status: 'doing', session: { state: 'running' } },
      run: { status: 'running' },
    });

    const [first] = await settled(req.id);
    expect(first).toMatchObject({ inputFromSequence: 1, inputToSequence: 1, status: 'succeeded' });
    const after = await requirement(req.id);
    expect(after).toMatchObject({
      session: { lastConsumedMessageSequence: 1, pendingMessageCount: 0, state: 'waiting_human' },
      status: 'waiting_confirmation',
    });
    expect(after.session.nativeSessionId).toEqual(expect.any(String));
    const conversation = await messages(req.id);
    expect(conversation.map((m) => [m.author, m.body, m.deliverToRd])).toEqual([
      ['human', `Go ahead ${req.id}`, true],
      ['rd_agent', 'Timings are in place.', false],
    ]);
    expect(conversation[1].runId).toBe(first.id);

    const reply = await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: req.id } },
      body: { message: 'Now the flush path.' },
    });
    expect(reply.data).toMatchObject({ queued: false, requirement: { status: 'doing' } });
    const [, second] = await settled(req.id, 2);
    // Sequence 2 is the agent's own answer (not deliverable); the reply is 3.
    expect(second).toMatchObject({
      inputFromSequence: 2,
      inputToSequence: 3,
      nativeSessionId: after.session.nativeSessionId,
      status: 'succeeded',
    });
    const last = stub.requests[stub.requests.length - 1];
    expect(last.transcript).toContain('Timings are in place.');
    expect(last.transcript).toContain('Now the flush path.');
    expect((await requirement(req.id)).session.nativeSessionId).toBe(after.session.nativeSessionId);
    // Usage is per run, although Codex reports a running total for a resumed thread (the stub
    // charges 100 input / 20 output tokens per request, one request per run here).
    const usage = (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: req.id } } }))).items.map(
      (r) => [r.inputTokens, r.outputTokens],
    );
    expect(usage).toEqual([
      [100, 20],
      [100, 20],
    ]);
  });

  it('shows a real shell command and its output in the trace', async () => {
    const req = await create('shell');
    stub.scriptFor(req.id, [
      { shell: 'echo from-the-tool > tool-output.txt && cat tool-output.txt' },
      { text: 'Ran it.' },
    ]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `run it ${req.id}` },
    });
    const [run] = await settled(req.id);
    expect(run.status).toBe('succeeded');
    expect(fs.readFileSync(path.join(sandbox.workspace, 'tool-output.txt'), 'utf8')).toBe('from-the-tool\n');
    const trace = (
      await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: run.id }, query: { limit: 200 } } }))
    ).items;
    const call = trace.find((t) => t.kind === 'tool_call');
    const result = trace.find((t) => t.kind === 'tool_result');
    expect(call?.detail ?? '').toContain('echo from-the-tool');
    expect(result?.detail ?? '').toContain('from-the-tool');
    expect(trace.map((t) => t.sequence)).toEqual(trace.map((_, i) => i + 1));
    const all = (
      await ok(
        manager.api.GET('/api/requirements/{id}/trace', { params: { path: { id: req.id }, query: { limit: 200 } } }),
      )
    ).items;
    expect(all).toHaveLength(trace.length);
  });

  it("runs code-factory-cli by its bare name inside the agent's own tool shell", async () => {
    const req = await create('cli on path');
    stub.scriptFor(req.id, [{ shell: 'code-factory-cli --help' }, { text: 'Read the help.' }]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `check the cli ${req.id}` },
    });
    const [run] = await settled(req.id);
    const trace = (
      await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: run.id }, query: { limit: 200 } } }))
    ).items;
    const result = trace.find((t) => t.kind === 'tool_result');
    expect(result?.detail ?? '').toMatch(/Usage: code-factory-cli/);
  });

  it('hands image and file attachments to the agent (Codex: native images; Claude: paths)', async () => {
    const req = await create('attachments');
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
      'base64',
    );
    const image = await ok(upload(manager.api, req.id, 'screen.png', png));
    const notes = await ok(upload(manager.api, req.id, 'notes.md', 'the notes'));
    const attachments = path.join(manager.dataDirectory(), 'attachments');
    // The bytes are in the database; the run's copies are written from there (as on a manager of a
    // shared database that did not take the upload): one copy gone, the other cut short.
    fs.rmSync(path.join(attachments, `${image.id}.png`));
    fs.writeFileSync(path.join(attachments, `${notes.id}.md`), 'the');
    stub.scriptFor(req.id, [{ text: 'Looked at both.' }]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { attachmentIds: [image.id, notes.id], message: `see attached ${req.id}` },
    });
    const [run] = await settled(req.id);
    expect(run.status).toBe('succeeded');
    const request = stub.requests.filter((r) => r.marker === req.id).pop()!;
    expect(fs.readFileSync(path.join(attachments, `${image.id}.png`))).toEqual(png);
    expect(fs.readFileSync(path.join(attachments, `${notes.id}.md`), 'utf8')).toBe('the notes');
    expect(request.transcript).toContain(path.join(attachments, `${notes.id}.md`));
    if (provider === 'codex') {
      expect(JSON.stringify(request.body)).toContain('"input_image"');
    } else {
      expect(request.transcript).toContain(path.join(attachments, `${image.id}.png`));
    }
  });

  it('queues replies during a run and delivers them together, in order, to the next run', async () => {
    const req = await create('queue');
    stub.scriptFor(req.id, [{ delayMs: 2500, then: { text: 'First part done.' } }, { text: 'Both follow-ups done.' }]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `start ${req.id}` },
    });
    await runningRun(req.id);
    const a = await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: req.id } },
      body: { message: 'follow-up A' },
    });
    const b = await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: req.id } },
      body: { message: 'follow-up B' },
    });
    expect([a.data!.queued, b.data!.queued]).toEqual([true, true]);
    const [first, second] = await settled(req.id, 2);
    expect(first).toMatchObject({ inputFromSequence: 1, inputToSequence: 1, status: 'succeeded' });
    // The rd_agent answer (sequence 4) is not deliverable: the next run takes 2..4 and consumes to 4.
    expect(second).toMatchObject({ inputFromSequence: 2, status: 'succeeded' });
    const prompt = stub.requests.filter((r) => r.marker === req.id).pop()!.transcript;
    expect(prompt.indexOf('follow-up A')).toBeGreaterThan(-1);
    expect(prompt.indexOf('follow-up B')).toBeGreaterThan(prompt.indexOf('follow-up A'));
    const final = await requirement(req.id);
    expect(final.session).toMatchObject({
      lastConsumedMessageSequence: second.inputToSequence,
      pendingMessageCount: 0,
    });
  });

  it('steers only with newer input, continues at once, stops on request and leaves no process behind', async () => {
    const req = await create('steer');
    stub.scriptFor(req.id, [{ shell: LONG_JOB }]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `long job ${req.id}` },
    });
    const first = await runningRun(req.id);
    await untilToolRunning(first.id);
    await expectRefused(
      manager.dataDirectory(),
      () =>
        manager.api.POST('/api/requirements/{id}/interrupt', {
          params: { path: { id: req.id } },
          body: { mode: 'steer' },
        }),
      409,
      'nothing_to_steer_with',
    );
    await expectRefused(
      manager.dataDirectory(),
      () => sendUntyped(manager.origin, 'POST', `/api/requirements/${req.id}/interrupt`, { mode: 'sideways' }),
      400,
    );

    stub.scriptFor(req.id, [{ text: 'Steered.' }]);
    await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: req.id } },
      body: { message: 'change of plan' },
    });
    const steer = await manager.api.POST('/api/requirements/{id}/interrupt', {
      params: { path: { id: req.id } },
      body: { mode: 'steer' },
    });
    expect(steer.status).toBe(202);
    expect(steer.data!.runId).toBe(first.id);
    const [cancelled, continued] = await settled(req.id, 2);
    expect(cancelled).toMatchObject({ id: first.id, status: 'cancelled' });
    expect(continued).toMatchObject({ inputFromSequence: 1, status: 'succeeded' });
    expect(findRunProcesses(first.id, null)).toEqual([]);
    expect(sleepers()).toEqual([]);

    stub.scriptFor(req.id, [{ shell: LONG_JOB }]);
    await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: req.id } },
      body: { message: `another long job ${req.id}` },
    });
    const third = await runningRun(req.id);
    await untilToolRunning(third.id);
    expect(sleepers().length).toBeGreaterThan(0);
    expect(
      (
        await manager.api.POST('/api/requirements/{id}/interrupt', {
          params: { path: { id: req.id } },
          body: { mode: 'stop' },
        })
      ).status,
    ).toBe(202);
    const all = await settled(req.id, 3);
    expect(all[2]).toMatchObject({ id: third.id, status: 'cancelled' });
    const stopped = await requirement(req.id);
    expect(stopped).toMatchObject({ session: { state: 'waiting_human' }, status: 'waiting_confirmation' });
    expect(stopped.session.pausedAt).toEqual(expect.any(String));
    expect(findRunProcesses(third.id, null)).toEqual([]);
    expect(sleepers()).toEqual([]);
    await expectRefused(
      manager.dataDirectory(),
      () => manager.api.POST('/api/requirements/{id}/interrupt', { params: { path: { id: req.id } }, body: {} }),
      409,
      'no_active_run',
    );
  });

  managerIt(
    'stop is a pause: queued input and related messages stay pending, across a restart, until a start delivers them all',
    async () => {
      const req = await create('pause');
      // The first run proposes a child (so a related agent can message it later), then works on.
      stub.scriptFor(req.id, [
        { shell: `code-factory-cli requirement propose --title "Pause child" --description "Report to the parent"` },
        { shell: LONG_JOB },
      ]);
      await manager.api.POST('/api/requirements/{id}/start', {
        params: { path: { id: req.id } },
        body: { message: `long job ${req.id}` },
      });
      const first = await runningRun(req.id);
      await untilToolRunning(first.id);
      const queued = await manager.api.POST('/api/requirements/{id}/reply', {
        params: { path: { id: req.id } },
        body: { message: 'queued behind the run' },
      });
      expect(queued.data).toMatchObject({ queued: true });

      expect(
        (
          await manager.api.POST('/api/requirements/{id}/interrupt', {
            params: { path: { id: req.id } },
            body: { mode: 'stop' },
          })
        ).status,
      ).toBe(202);
      const [cancelled] = await settled(req.id);
      expect(cancelled).toMatchObject({ id: first.id, status: 'cancelled' });
      expect(findRunProcesses(first.id, null)).toEqual([]);
      const paused = await requirement(req.id);
      // Both the interrupted message (1) and the queued reply (2) wait; nothing was consumed.
      expect(paused).toMatchObject({
        session: { lastConsumedMessageSequence: 0, pendingMessageCount: 2, state: 'waiting_human' },
        status: 'waiting_confirmation',
      });
      expect(paused.session.pausedAt).toEqual(expect.any(String));
      // Stop is not steer: the queued reply does not start a run. The run's end decided that in its
      // own unit (state above); the count is checked again after the child's whole run below.
      expect(await runs(req.id)).toHaveLength(1);

      // The child's real agent messages the paused parent: recorded as pending, still no run.
      const [child] = (
        await ok(manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))
      ).items.filter((r) => r.parentRequirementId === req.id);
      stub.scriptFor(child.id, [
        { shell: `code-factory-cli requirement message --requirement-id ${req.id} --message "the child reports in"` },
        { text: 'Told the parent.' },
      ]);
      await manager.api.POST('/api/requirements/{id}/start', {
        params: { path: { id: child.id } },
        body: { message: `report ${child.id}` },
      });
      const [childRun] = await settled(child.id);
      expect(childRun).toMatchObject({ status: 'succeeded' });
      const related = (await messages(req.id)).find((m) => m.author === 'rd_agent');
      expect(related).toMatchObject({ body: 'the child reports in', deliverToRd: true, sequence: 3 });
      expect(await runs(req.id)).toHaveLength(1);
      expect((await requirement(req.id)).session).toMatchObject({
        pausedAt: paused.session.pausedAt,
        pendingMessageCount: 3,
      });

      // The pause is stored: a restart neither forgets it nor resumes the session.
      await manager.stop();
      await start();
      expect(await requirement(req.id)).toMatchObject({
        session: { pausedAt: paused.session.pausedAt, pendingMessageCount: 3, state: 'waiting_human' },
        status: 'waiting_confirmation',
      });
      // The start's own work (reconciliation, catch-ups) ran before the server listened; a marker
      // written on this Requirement after it commits after anything that work started. Once the
      // marker's event is here, a run started by the restart would have come before it.
      const stream = await connectSse(`${manager.origin}/api/events`);
      try {
        await ok(
          manager.api.PUT('/api/requirements/{id}/dependencies', {
            body: { dependsOn: [] },
            params: { path: { id: req.id } },
          }),
        );
        const marker = await stream.waitUntil(
          (e) => e.event === 'requirement.updated' && e.data.requirementId === req.id,
          'the marker on the paused Requirement',
        );
        expect(
          stream.events.filter((e) => e.id <= marker.id && e.event === 'run.started').map((e) => e.data.requirementId),
        ).not.toContain(req.id);
      } finally {
        stream.close();
      }
      expect(await runs(req.id)).toHaveLength(1);

      // A person's start ends the pause: one run takes the interrupted, queued and related input.
      stub.scriptFor(req.id, [{ text: 'Resumed with everything.' }]);
      const resumed = await manager.api.POST('/api/requirements/{id}/start', {
        params: { path: { id: req.id } },
        body: {},
      });
      expect(resumed.data).toMatchObject({
        requirement: { session: { pausedAt: null, state: 'running' }, status: 'doing' },
        run: { inputFromSequence: 1, inputToSequence: 3 },
      });
      const [, second] = await settled(req.id, 2);
      expect(second).toMatchObject({ inputFromSequence: 1, inputToSequence: 3, status: 'succeeded' });
      const prompt = stub.requests.filter((r) => r.marker === req.id).pop()!.transcript;
      for (const text of [`long job ${req.id}`, 'queued behind the run', 'the child reports in']) {
        expect(prompt).toContain(text);
      }
      expect((await requirement(req.id)).session).toMatchObject({
        lastConsumedMessageSequence: 3,
        pausedAt: null,
        pendingMessageCount: 0,
        state: 'waiting_human',
      });
      expect(await runs(req.id)).toHaveLength(2);
    },
  );

  it('fails a run on a model error without consuming anything, and a retry delivers the same input', async () => {
    const req = await create('error');
    stub.scriptFor(req.id, [{ error: { message: 'the model is on fire', status: 500 } }]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `fragile ${req.id}` },
    });
    const [failed] = await settled(req.id);
    expect(failed).toMatchObject({ status: 'failed' });
    expect(failed.error).toEqual(expect.any(String));
    const after = await requirement(req.id);
    expect(after).toMatchObject({
      session: { lastConsumedMessageSequence: 0, pendingMessageCount: 1, state: 'failed' },
      status: 'waiting_confirmation',
    });
    const conversation = await messages(req.id);
    expect(conversation.map((m) => m.author)).toEqual(['human', 'system']);
    expect(conversation[1].body).toContain('failed');

    stub.scriptFor(req.id, [{ text: 'Recovered.' }]);
    const retry = await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: {},
    });
    expect(retry.status).toBe(202);
    const [, second] = await settled(req.id, 2);
    expect(second).toMatchObject({ inputFromSequence: 1, inputToSequence: 2, status: 'succeeded' });
    expect(stub.requests.filter((r) => r.marker === req.id).pop()!.transcript).toContain(`fragile ${req.id}`);
    expect((await requirement(req.id)).session).toMatchObject({
      lastConsumedMessageSequence: 2,
      lastError: null,
      state: 'waiting_human',
    });
  });

  managerIt('refuses a second start while a run is active, and starts on done or cancelled Requirements', async () => {
    const req = await create('double start');
    stub.scriptFor(req.id, [{ delayMs: 1500, then: { text: 'ok' } }]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `once ${req.id}` },
    });
    await expectRefused(
      manager.dataDirectory(),
      () => manager.api.POST('/api/requirements/{id}/start', { params: { path: { id: req.id } }, body: {} }),
      409,
      'run_active',
    );
    await settled(req.id);
    await manager.api.POST('/api/requirements/{id}/confirm', { params: { path: { id: req.id } } });
    await expectRefused(
      manager.dataDirectory(),
      () => manager.api.POST('/api/requirements/{id}/start', { params: { path: { id: req.id } }, body: {} }),
      409,
      'requirement_closed',
    );
    await expectRefused(
      manager.dataDirectory(),
      () =>
        manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: 'req_00000000-0000-0000-0000-000000000000' } },
          body: {},
        }),
      404,
    );
  });

  it('reopens a done Requirement in its original session when someone replies', async () => {
    const req = await create('reopen');
    stub.scriptFor(req.id, [{ text: 'Done.' }, { text: 'Reopened and fixed.' }]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `job ${req.id}` },
    });
    await settled(req.id);
    const native = (await requirement(req.id)).session.nativeSessionId;
    const confirmed = await manager.api.POST('/api/requirements/{id}/confirm', { params: { path: { id: req.id } } });
    expect(confirmed.data).toMatchObject({ session: { state: 'completed' }, status: 'done' });
    const reply = await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: req.id } },
      body: { message: 'one more thing' },
    });
    expect(reply.data).toMatchObject({ queued: false, requirement: { completedAt: null, status: 'doing' } });
    const [, second] = await settled(req.id, 2);
    expect(second).toMatchObject({ nativeSessionId: native, status: 'succeeded' });
  });

  managerIt('times a silent run out after the inactivity window', async () => {
    await manager.api.PATCH('/api/configuration', { body: { rdInactivityTimeoutSeconds: 2 } });
    try {
      const req = await create('silent');
      stub.scriptFor(req.id, [{ hang: true }]);
      await manager.api.POST('/api/requirements/{id}/start', {
        params: { path: { id: req.id } },
        body: { message: `hang ${req.id}` },
      });
      const [run] = await settled(req.id);
      expect(run).toMatchObject({ error: 'no output for 2 s', status: 'timed_out' });
      expect(await requirement(req.id)).toMatchObject({
        session: { lastConsumedMessageSequence: 0, state: 'failed' },
        status: 'waiting_confirmation',
      });
      expect(findRunProcesses(run.id, null)).toEqual([]);
    } finally {
      await manager.api.PATCH('/api/configuration', { body: { rdInactivityTimeoutSeconds: 3600 } });
    }
  });

  it('runs 10 Requirements concurrently to completion', async () => {
    const reqs = await Promise.all(Array.from({ length: 10 }, (_, i) => create(`parallel ${i}`)));
    for (const req of reqs) {
      stub.scriptFor(req.id, [{ text: `answer for ${req.id}` }]);
    }
    await Promise.all(
      reqs.map((req) =>
        manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: req.id } },
          body: { message: `go ${req.id}` },
        }),
      ),
    );
    for (const req of reqs) {
      const [run] = await settled(req.id, 1, 120_000);
      expect(run.status).toBe('succeeded');
      expect((await messages(req.id)).map((m) => m.body)).toEqual([`go ${req.id}`, `answer for ${req.id}`]);
    }
  });

  it('reconciles a run cut off by kill -9 of the manager: failed, nothing lost, no agent left', async () => {
    const req = await create('crash');
    stub.scriptFor(req.id, [{ shell: LONG_JOB }]);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `crash me ${req.id}` },
    });
    const run = await runningRun(req.id);
    await untilToolRunning(run.id);
    await manager.api.POST('/api/requirements/{id}/reply', {
      params: { path: { id: req.id } },
      body: { message: 'queued before the crash' },
    });
    await manager.kill9();
    expect(findRunProcesses(run.id, null).length).toBeGreaterThan(0); // the orphaned agent goes on…

    await start();
    expect(findRunProcesses(run.id, null)).toEqual([]); // …until the next start ends it
    expect(sleepers()).toEqual([]);
    const [failed] = await settled(req.id);
    expect(failed).toMatchObject({
      error: 'Agent Manager stopped while this run was active',
      id: run.id,
      status: 'failed',
    });
    expect(await requirement(req.id)).toMatchObject({
      session: { lastConsumedMessageSequence: 0, pendingMessageCount: 2, state: 'failed' },
      status: 'waiting_confirmation',
    });
    const events = await query<{ type: string; payload: string }>(
      path.join(manager.dataDirectory(), 'factory.sqlite'),
      `SELECT type, payload FROM manager_event WHERE type = 'manager.reconciled'`,
    );
    expect(JSON.parse(events[events.length - 1].payload)).toMatchObject({ failedRunIds: [run.id] });

    stub.scriptFor(req.id, [{ text: 'Picked up after the crash.' }]);
    await manager.api.POST('/api/requirements/{id}/start', { params: { path: { id: req.id } }, body: {} });
    const [, retried] = await settled(req.id, 2);
    expect(retried).toMatchObject({ inputFromSequence: 1, status: 'succeeded' });
    const prompt = stub.requests.filter((r) => r.marker === req.id).pop()!.transcript;
    expect(prompt).toContain('queued before the crash');
  });

  it('publishes the run lifecycle and its trace on the event stream', async () => {
    const req = await create('events');
    stub.scriptFor(req.id, [{ text: 'Evented.' }]);
    const stream = await connectSse(`${manager.origin}/api/events`);
    await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: req.id } },
      body: { message: `events ${req.id}` },
    });
    const [run] = await settled(req.id);
    await stream.waitUntil(
      (e) => e.event === 'run.succeeded' && (e.data.payload.run as { id: string }).id === run.id,
      'the run.succeeded event',
    );
    stream.close();
    // What a reaction writes after the run's end (its Needs-you item) is not the run's lifecycle.
    const mine = stream.events
      .filter((e) => e.data.requirementId === req.id && !e.event.startsWith('attention.'))
      .map((e) => e.event);
    expect(mine[0]).toBe('message.created');
    expect(mine).toContain('run.started');
    expect(mine).toContain('run.trace.appended');
    expect(mine[mine.length - 1]).toBe('run.succeeded');
    expect(mine.filter((t) => t === 'message.created')).toHaveLength(2);
  });

  /** The processes of LONG_JOB that are still alive. */
  function sleepers(): number[] {
    return fs
      .readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return fs.readFileSync(`/proc/${p}/cmdline`, 'latin1').includes('\u0000am-sleeper-');
        } catch {
          return false;
        }
      })
      .map(Number);
  }

  async function untilToolRunning(runId: string): Promise<void> {
    const traceOf = async () =>
      (await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: runId }, query: { limit: 200 } } })))
        .items;
    await until(
      'the tool command to run',
      async () => (await traceOf()).some((t) => t.kind === 'tool_call') && sleepers().length > 0,
      15_000,
    ).catch(async (err: Error) => {
      throw new Error(
        `${err.message}: ${JSON.stringify(await traceOf()).slice(0, 1500)} sleepers=${sleepers().join(',')}`,
      );
    });
  }
});

describe('an agent CLI that cannot be started', () => {
  const failedRun = (manager: ManagerProcess, id: string) =>
    until('the run to fail', async () => {
      const run = (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: id } } }))).items[0];
      return run?.status === 'failed' && run;
    });

  it('fails the run with a clear error and consumes nothing', async () => {
    const sandbox = makeSandbox();
    const manager = await startManager({ env: { CODE_FACTORY_CODEX_EXECUTABLE: '/nonexistent/codex' }, sandbox });
    try {
      const req = await ok(
        manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'missing cli' } }),
      );
      await manager.api.POST('/api/requirements/{id}/start', {
        params: { path: { id: req.id } },
        body: { message: 'hello' },
      });
      const run = await failedRun(manager, req.id);
      expect(run.error).toBe(
        'the agent CLI could not be started: Codex CLI (`/nonexistent/codex`) was not found (or is not executable). Install it (npm i -g @openai/codex) or set codexExecutable in the configuration.',
      );
      expect(await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: req.id } } }))).toMatchObject({
        session: { lastConsumedMessageSequence: 0, lastError: run.error, pendingMessageCount: 1, state: 'failed' },
        status: 'waiting_confirmation',
      });
    } finally {
      await manager.stop();
      sandbox.cleanup();
    }
  });

  it('never publishes an older Requirement version after a newer one (the failure message, then run.failed), over 20 failed starts', async () => {
    const sandbox = makeSandbox();
    const failing = path.join(sandbox.workspace, '..', 'failing-codex');
    fs.writeFileSync(failing, '#!/bin/sh\nexit 3\n', { mode: 0o755 });
    const manager = await startManager({ env: { CODE_FACTORY_CODEX_EXECUTABLE: failing }, sandbox });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const req = await ok(
          manager.api.POST('/api/requirements', { body: { provider: 'codex', title: `fails ${i}` } }),
        );
        await manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: req.id } },
          body: { message: 'hello' },
        });
        ids.push(req.id);
      }
      for (const id of ids) {
        await until(
          'the run to fail',
          async () =>
            (await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }))).session.state ===
              'failed' || undefined,
        );
      }
      // A client merges Requirement snapshots by update time: along the stream they must not go back.
      const rows = await query<{ requirement_id: string; type: string; version: string }>(
        path.join(manager.dataDirectory(), 'factory.sqlite'),
        onPostgres()
          ? `SELECT * FROM (SELECT id, requirement_id, type, payload::json->'requirement'->>'updatedAt' AS version FROM manager_event) e WHERE version IS NOT NULL ORDER BY id`
          : `SELECT requirement_id, type, json_extract(payload, '$.requirement.updatedAt') AS version FROM manager_event WHERE version IS NOT NULL ORDER BY id`,
      );
      const last = new Map<string, string>();
      const regressions = rows.filter((r) => {
        const before = last.get(r.requirement_id);
        last.set(r.requirement_id, r.version);
        return before !== undefined && r.version < before;
      });
      expect(regressions).toEqual([]);
      expect(rows.filter((r) => r.type === 'run.failed')).toHaveLength(20);
    } finally {
      await manager.stop();
      sandbox.cleanup();
    }
  });

  it('says which program is not on PATH and what fixes it, in the run, the session and the conversation', async () => {
    const sandbox = makeSandbox();
    // Neither CLI is on this PATH (the manager itself runs from process.execPath).
    const emptyBin = path.join(path.dirname(sandbox.home), 'empty-bin');
    fs.mkdirSync(emptyBin);
    const manager = await startManager({
      env: {
        CODE_FACTORY_CLAUDE_EXECUTABLE: 'claude',
        CODE_FACTORY_CODEX_EXECUTABLE: 'codex',
        // Without bubblewrap on PATH there is no sandbox, so no network of the run's own: a start
        // would be refused (503, the network suite's subject); here the missing CLI is the subject.
        CODE_FACTORY_NETWORK_MODE: 'open',
        PATH: emptyBin,
      },
      sandbox,
    });
    try {
      const expected = {
        'claude-code':
          'Claude Code (`claude`) was not found on PATH. Install it (npm i -g @anthropic-ai/claude-code) or set claudeExecutable in the configuration.',
        codex:
          'Codex CLI (`codex`) was not found on PATH. Install it (npm i -g @openai/codex) or set codexExecutable in the configuration.',
      };
      for (const [provider, sentence] of Object.entries(expected) as Array<[keyof typeof expected, string]>) {
        const req = await ok(manager.api.POST('/api/requirements', { body: { provider, title: `no ${provider}` } }));
        expect(
          (
            await manager.api.POST('/api/requirements/{id}/start', {
              params: { path: { id: req.id } },
              body: { message: 'hello' },
            })
          ).status,
        ).toBe(202);
        const run = await failedRun(manager, req.id);
        expect(run.error).toBe(`the agent CLI could not be started: ${sentence}`);
        expect(
          (await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: req.id } } }))).session.lastError,
        ).toBe(run.error);
        const messages = (
          await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id: req.id } } }))
        ).items;
        expect(messages.find((m) => m.author === 'system')?.body).toContain(sentence);
      }
    } finally {
      await manager.stop();
      sandbox.cleanup();
    }
  });
});
