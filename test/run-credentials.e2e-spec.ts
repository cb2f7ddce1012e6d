import { RunCredentialsService } from '@server/auth/run-credentials.service';
import { RunningManager, startManager } from '@server/manager';

import { apiClient, ok, upload } from './support/api';
import { registerToken } from './support/http';
import { expectRefused as refused } from './support/refusals';
import { Sandbox, makeSandbox } from './support/manager-process';
import { connectSse } from './support/sse-client';
import { LocalTokenService } from '@server/auth/local-token.service';

// The runs issue injects run credentials into agent processes; here they are issued directly
// through the service of a real in-process server that listens on a real port.
describe('run-scoped agent credentials', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  let credentials: RunCredentialsService;
  let own: { id: string; session: { id: string } };
  let other: { id: string; session: { id: string } };

  const as = (token: string) => ({ Authorization: `Bearer ${token}` });
  /** The typed client with the workspace token, and with a run credential. */
  const owner = () => apiClient(manager.url);
  const asRun = (token: string) => apiClient(manager.url, { auth: token });
  const expectRefused = (request: Parameters<typeof refused>[1], status: number, code?: string) =>
    refused(manager.runtime.paths.dataDirectory, request, status, code);

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startManager({
      env: { ...process.env, CODE_FACTORY_HOME: sandbox.home },
      overrides: { port: 0 },
      workspace: sandbox.workspace,
    });
    registerToken(manager.url, manager.app.get(LocalTokenService).value);
    credentials = manager.app.get(RunCredentialsService);
    own = await ok(owner().POST('/api/requirements', { body: { provider: 'codex', title: 'own' } }));
    other = await ok(owner().POST('/api/requirements', { body: { provider: 'codex', title: 'other' } }));
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  const issue = (runId = `run_${Math.random().toString(16).slice(2)}`) => ({
    runId,
    token: credentials.issue({ requirementId: own.id, runId, sessionId: own.session.id }),
  });

  it('identifies its run, Requirement and session on the agent API', async () => {
    const { runId, token } = issue();
    expect(token).toMatch(/^amr_[0-9a-f]{64}$/);
    const res = await asRun(token).GET('/api/agent/context');
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ requirementId: own.id, runId, sessionId: own.session.id });
  });

  it('is refused on every human endpoint (403), writing nothing', async () => {
    const { token } = issue();
    await expectRefused(() => asRun(token).GET('/api/requirements'), 403, 'outside_run_scope');
    await expectRefused(() => asRun(token).POST('/api/requirements', { body: { provider: 'codex', title: 'x' } }), 403);
    await expectRefused(
      () =>
        asRun(token).POST('/api/requirements/{id}/reply', { params: { path: { id: own.id } }, body: { message: 'x' } }),
      403,
    );
    await expectRefused(
      () => asRun(token).POST('/api/requirements/{id}/confirm', { params: { path: { id: own.id } } }),
      403,
    );
    await expectRefused(() => asRun(token).PATCH('/api/configuration', { body: { authentication: 'none' } }), 403);
    await expectRefused(() => upload(asRun(token), own.id, 'a', 'x'), 403);
    const stream = await connectSse(`${manager.url}/api/events`, as(token));
    expect(stream.status).toBe(403);
    stream.close();
  });

  it("reaches only its own Requirement's timers", async () => {
    const { token } = issue();
    await expectRefused(
      () => asRun(token).GET('/api/requirements/{id}/timers', { params: { path: { id: other.id } } }),
      403,
      'outside_run_scope',
    );
    await expectRefused(
      () =>
        asRun(token).POST('/api/requirements/{id}/timers', {
          params: { path: { id: other.id } },
          body: { description: 'x', intervalSeconds: 60, schedule: 'once' },
        }),
      403,
    );
    await expectRefused(
      () =>
        asRun(token).DELETE('/api/requirements/{id}/timers/{timerId}', {
          params: { path: { id: other.id, timerId: 'tmr_1' } },
        }),
      403,
    );
    // Its own timers pass authentication (the timer endpoints themselves come with the timers issue).
    const ownTimers = await asRun(token).GET('/api/requirements/{id}/timers', { params: { path: { id: own.id } } });
    expect([401, 403]).not.toContain(ownTimers.status);
  });

  it('stops working once revoked (401)', async () => {
    const { runId, token } = issue();
    expect((await asRun(token).GET('/api/agent/context')).status).toBe(200);
    credentials.revoke(runId);
    await expectRefused(() => asRun(token).GET('/api/agent/context'), 401, 'run_credential_invalid');
    await expectRefused(() => asRun(`amr_${'0'.repeat(64)}`).GET('/api/agent/context'), 401);
  });

  it('is replaced when its run gets a new one', async () => {
    const first = issue('run_same');
    const second = issue('run_same');
    expect((await asRun(first.token).GET('/api/agent/context')).status).toBe(401);
    expect((await asRun(second.token).GET('/api/agent/context')).status).toBe(200);
  });

  it('keeps people off the run-only context endpoint (403)', async () => {
    await expectRefused(() => owner().GET('/api/agent/context'), 403, 'agent_credential_required');
  });
});
