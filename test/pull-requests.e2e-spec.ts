import type { Schemas } from '@libs/api-client';
import { LocalTokenService } from '@server/auth/local-token.service';
import { RunCredentialsService } from '@server/auth/run-credentials.service';
import { RunningManager, startManager } from '@server/manager';

import { apiClient, ok } from './support/api';
import { registerToken, sendUntyped } from './support/http';
import { IDLE_AGENT, Sandbox, makeSandbox } from './support/manager-process';
import { expectRefused } from './support/refusals';
import { connectSse } from './support/sse-client';

const PR: Omit<Schemas['RegisterPullRequestDto'], 'requirementId'> = {
  baseBranch: 'main',
  headBranch: 'feature/compaction',
  headSha: 'abc1234def',
  number: 184,
  repository: 'Org/Repo',
  status: 'open',
  title: 'Improve compaction',
  url: 'https://github.com/Org/Repo/pull/184',
};

// Run credentials are issued through the service of a real in-process server on a real port.
describe('POST /api/agent/pull-requests', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  /** The typed client with the workspace token. */
  const api = () => apiClient(manager.url);
  const asRun = (token: string) => apiClient(manager.url, { auth: token });
  let credentials: RunCredentialsService;
  let own: { id: string; session: { id: string } };
  let other: { id: string; session: { id: string } };
  let ownToken: string;
  let otherToken: string;

  const register = (body: Schemas['RegisterPullRequestDto'], token = ownToken) =>
    asRun(token).POST('/api/agent/pull-requests', { body });
  const refused = (request: Parameters<typeof expectRefused>[1], status: number, code?: string) =>
    expectRefused(manager.runtime.paths.dataDirectory, request, status, code);

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startManager({
      env: { ...process.env, CODE_FACTORY_CODEX_EXECUTABLE: IDLE_AGENT, CODE_FACTORY_HOME: sandbox.home },
      overrides: { port: 0 },
      workspace: sandbox.workspace,
    });
    registerToken(manager.url, manager.app.get(LocalTokenService).value);
    credentials = manager.app.get(RunCredentialsService);
    own = await ok(api().POST('/api/requirements', { body: { provider: 'codex', title: 'own' } }));
    other = await ok(api().POST('/api/requirements', { body: { provider: 'codex', title: 'other' } }));
    ownToken = credentials.issue({ requirementId: own.id, runId: 'run_own', sessionId: own.session.id });
    otherToken = credentials.issue({ requirementId: other.id, runId: 'run_other', sessionId: other.session.id });
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('registers a PR once and then refreshes only its metadata, never its lifecycle', async () => {
    const events = await connectSse(`${manager.url}/api/events`);
    const first = await register({ ...PR, requirementId: own.id });
    expect(first.status).toBe(200);
    expect(first.data).toMatchObject({ ...PR, requirementId: own.id, status: 'open' });
    expect(first.data!.id).toMatch(/^pr_/);

    const again = await register({
      ...PR,
      headSha: 'fedcba9876',
      repository: 'org/repo',
      requirementId: own.id,
      status: 'merged',
      title: 'Improve compaction (v2)',
    });
    expect(again.data).toMatchObject({
      headSha: 'fedcba9876',
      id: first.data!.id,
      status: 'open',
      title: 'Improve compaction (v2)',
    });

    const listed = await api().GET('/api/pull-requests', { params: { query: { requirementId: own.id } } });
    expect(listed.data!.items).toHaveLength(1);
    expect(listed.data!.items[0]).toMatchObject({ id: first.data!.id, status: 'open' });

    const received = await events.waitFor(2);
    expect(received.map((e) => [e.event, e.data.actor])).toEqual([
      ['pull_request.created', { id: 'run_own', kind: 'agent' }],
      ['pull_request.updated', { id: 'run_own', kind: 'agent' }],
    ]);
    events.close();
  });

  it("refuses a PR owned by another Requirement (409) and a claim outside the run's scope (403)", async () => {
    await refused(() => register({ ...PR, requirementId: other.id }, otherToken), 409, 'pull_request_owned');
    await refused(() => register({ ...PR, number: 185, requirementId: other.id }), 403, 'outside_run_scope');
    credentials.revoke('run_other');
    await refused(() => register({ ...PR, number: 186, requirementId: other.id }, otherToken), 401);
  });

  it("lets the owner's token register a PR for the Requirement it names, audited as a person", async () => {
    const events = await connectSse(`${manager.url}/api/events`);
    // An integration script that opened the PR itself: no run, the local token.
    const registered = await api().POST('/api/agent/pull-requests', {
      body: { ...PR, number: 190, requirementId: other.id },
    });
    expect(registered.status).toBe(200);
    expect(registered.data).toMatchObject({ number: 190, requirementId: other.id, status: 'open' });
    const [created] = await events.waitFor(1);
    expect(created).toMatchObject({
      data: { actor: { id: expect.stringMatching(/^person_/) as string, kind: 'human' } },
      event: 'pull_request.created',
    });
    events.close();
    await refused(
      () =>
        api().POST('/api/agent/pull-requests', {
          body: { ...PR, number: 191, requirementId: 'req_00000000-0000-4000-8000-000000000000' },
        }),
      404,
    );
    // A run credential keeps its scope.
    await refused(() => register({ ...PR, number: 192, requirementId: other.id }), 403, 'outside_run_scope');
  });

  it.each([
    ['a missing field', { ...PR, headSha: undefined }],
    ['a bad repository', { ...PR, repository: 'not a repo' }],
    ['a string number', { ...PR, number: '184' }],
    ['a zero number', { ...PR, number: 0 }],
    ['an unknown status', { ...PR, status: 'approved' }],
    ['a non-hex sha', { ...PR, headSha: 'zzzzzzz' }],
    ['a non-http url', { ...PR, url: 'javascript:alert(1)' }],
    ['an extra field', { ...PR, mergeable: true }],
  ])('refuses %s with 400, writing nothing', async (_name, body) => {
    // Invalid bodies on purpose: untyped, with the run credential.
    await refused(
      () =>
        sendUntyped(
          manager.url,
          'POST',
          '/api/agent/pull-requests',
          { ...body, requirementId: own.id },
          { Authorization: `Bearer ${ownToken}` },
        ),
      400,
    );
  });
});
