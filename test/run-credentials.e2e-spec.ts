import { RunCredentialsService } from '@server/auth/run-credentials.service';
import { RunningManager, startManager } from '@server/manager';

import { type Json, registerToken, send } from './support/http';
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
  const expectRefused = (request: () => Promise<{ status: number; json?: Json }>, status: number, code?: string) =>
    refused(manager.runtime.paths.dataDirectory, request, status, code);

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startManager({ env: { ...process.env, CODE_FACTORY_HOME: sandbox.home }, overrides: { port: 0 }, workspace: sandbox.workspace });
    registerToken(manager.url, manager.app.get(LocalTokenService).value);
    credentials = manager.app.get(RunCredentialsService);
    own = (await send(manager.url, 'POST', '/api/requirements', { provider: 'codex', title: 'own' })).json;
    other = (await send(manager.url, 'POST', '/api/requirements', { provider: 'codex', title: 'other' })).json;
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  const issue = (runId = `run_${Math.random().toString(16).slice(2)}`) => ({ runId, token: credentials.issue({ requirementId: own.id, runId, sessionId: own.session.id }) });

  it('identifies its run, Requirement and session on the agent API', async () => {
    const { runId, token } = issue();
    expect(token).toMatch(/^amr_[0-9a-f]{64}$/);
    const res = await send(manager.url, 'GET', '/api/agent/context', undefined, as(token));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ requirementId: own.id, runId, sessionId: own.session.id });
  });

  it('is refused on every human endpoint (403), writing nothing', async () => {
    const { token } = issue();
    await expectRefused(() => send(manager.url, 'GET', '/api/requirements', undefined, as(token)), 403, 'outside_run_scope');
    await expectRefused(() => send(manager.url, 'POST', '/api/requirements', { provider: 'codex', title: 'x' }, as(token)), 403);
    await expectRefused(() => send(manager.url, 'POST', `/api/requirements/${own.id}/reply`, { message: 'x' }, as(token)), 403);
    await expectRefused(() => send(manager.url, 'POST', `/api/requirements/${own.id}/confirm`, undefined, as(token)), 403);
    await expectRefused(() => send(manager.url, 'PATCH', '/api/configuration', { authentication: 'none' }, as(token)), 403);
    await expectRefused(() => send(manager.url, 'POST', `/api/requirements/${own.id}/attachments`, 'x', { ...as(token), 'X-File-Name': 'a' }), 403);
    const stream = await connectSse(`${manager.url}/api/events`, as(token));
    expect(stream.status).toBe(403);
    stream.close();
  });

  it("reaches only its own Requirement's timers", async () => {
    const { token } = issue();
    await expectRefused(() => send(manager.url, 'GET', `/api/requirements/${other.id}/timers`, undefined, as(token)), 403, 'outside_run_scope');
    await expectRefused(() => send(manager.url, 'POST', `/api/requirements/${other.id}/timers`, { description: 'x' }, as(token)), 403);
    await expectRefused(() => send(manager.url, 'DELETE', `/api/requirements/${encodeURIComponent(other.id)}/timers/tmr_1`, undefined, as(token)), 403);
    // Its own timers pass authentication (the timer endpoints themselves come with the timers issue).
    const ownTimers = await send(manager.url, 'GET', `/api/requirements/${own.id}/timers`, undefined, as(token));
    expect([401, 403]).not.toContain(ownTimers.status);
  });

  it('stops working once revoked (401)', async () => {
    const { runId, token } = issue();
    expect((await send(manager.url, 'GET', '/api/agent/context', undefined, as(token))).status).toBe(200);
    credentials.revoke(runId);
    await expectRefused(() => send(manager.url, 'GET', '/api/agent/context', undefined, as(token)), 401, 'run_credential_invalid');
    await expectRefused(() => send(manager.url, 'GET', '/api/agent/context', undefined, as(`amr_${'0'.repeat(64)}`)), 401);
  });

  it('is replaced when its run gets a new one', async () => {
    const first = issue('run_same');
    const second = issue('run_same');
    expect((await send(manager.url, 'GET', '/api/agent/context', undefined, as(first.token))).status).toBe(401);
    expect((await send(manager.url, 'GET', '/api/agent/context', undefined, as(second.token))).status).toBe(200);
  });

  it('keeps people off the run-only context endpoint (403)', async () => {
    await expectRefused(() => send(manager.url, 'GET', '/api/agent/context'), 403, 'agent_credential_required');
  });
});
