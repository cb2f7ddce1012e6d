import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';
import { LocalTokenService } from '@server/auth/local-token.service';
import { RunCredentialsService } from '@server/auth/run-credentials.service';
import { Database } from '@server/core/database/database.service';
import { DependenciesRepository } from '@server/requirements/dependencies.repository';
import { PullRequestReconciler } from '@server/forges/pull-request-reconciler.service';
import { RunningManager, startManager } from '@server/manager';

import { apiClient, ok } from './support/api';
import { FakeGitHubServer } from './support/fake-github-server';
import { type Json, registerToken, sendUntyped } from './support/http';
import { ROOT, Sandbox, makeSandbox } from './support/manager-process';
import { until } from './support/wait';

const TOKEN = 'ghp_fake_dependencies_token';
const REPO = 'Org/Repo';
/** Speaks Codex's JSON output and succeeds quickly: every run ends on its own. */
const SCRIPTED_AGENT = path.join(ROOT, 'test', 'fixtures', 'agents', 'scripted-agent.js');
const DEPENDENCY_TRIGGER = 'requirement.dependency';

interface Message {
  author: string;
  body: string;
  deliverToRd: boolean;
  source: string | null;
  triggerId: string | null;
  metadata: Record<string, Json> | null;
}

/**
 * Dependencies between Requirements (issue 18 §2) on a real in-process manager whose agent is
 * the scripted one (each run succeeds on its own) and whose GitHub is the fake server. Polling
 * is off: each test reconciles when it wants, so every count is exact.
 */
describe('Requirement dependencies', () => {
  let sandbox: Sandbox;
  let github: FakeGitHubServer;
  let manager: RunningManager;
  /** The typed client with the workspace token. */
  const api = () => apiClient(manager.url);
  const savedToken = process.env.GITHUB_TOKEN;

  const start = async () => {
    const configPath = path.join(sandbox.workspace, '..', 'agent-manager.config.json');
    if (!fs.existsSync(configPath)) {
      fs.writeFileSync(
        configPath,
        JSON.stringify({ githubApiUrl: github.url, pullRequestReconcileIntervalSeconds: 0 }),
      );
    }
    manager = await startManager({
      configPath,
      env: {
        ...process.env,
        CODE_FACTORY_CLAUDE_EXECUTABLE: SCRIPTED_AGENT,
        CODE_FACTORY_CODEX_EXECUTABLE: SCRIPTED_AGENT,
        CODE_FACTORY_HOME: sandbox.home,
      },
      overrides: { port: 0 },
      workspace: sandbox.workspace,
    });
    registerToken(manager.url, manager.app.get(LocalTokenService).value);
  };
  const restart = async () => {
    await manager.stop();
    await start();
  };
  const reconcile = () => manager.app.get(PullRequestReconciler).reconcile();
  const create = (title: string, extra: Partial<Schemas['CreateRequirementDto']> = {}) =>
    ok(api().POST('/api/requirements', { body: { provider: 'codex', title, ...extra } }), 201);
  const get = async (id: string) => await ok(api().GET('/api/requirements/{id}', { params: { path: { id } } }));
  const startRequirement = (id: string) =>
    api().POST('/api/requirements/{id}/start', { params: { path: { id } }, body: {} });
  const setDependencies = (id: string, body: Schemas['SetDependenciesDto']) =>
    api().PUT('/api/requirements/{id}/dependencies', { params: { path: { id } }, body });
  const runs = async (id: string) =>
    (await ok(api().GET('/api/runs', { params: { query: { requirementId: id, limit: 100 } } }))).items;
  const told = async (id: string): Promise<Message[]> =>
    (
      await ok(api().GET('/api/requirements/{id}/messages', { params: { path: { id }, query: { limit: 200 } } }))
    ).items.filter((m) => m.triggerId === DEPENDENCY_TRIGGER);
  const settled = (id: string, runCount: number) =>
    until(`${id} waiting after ${runCount} run(s)`, async () => {
      const [requirement, all] = await Promise.all([get(id), runs(id)]);
      return (
        (requirement.status === 'waiting_confirmation' &&
          all.length === runCount &&
          all.every((r: Json) => r.status !== 'running')) ||
        undefined
      );
    });
  /** A Requirement that ran once and waits for confirmation. */
  const ranOnce = async (title: string) => {
    const requirement = await create(title);
    expect((await startRequirement(requirement.id)).status).toBe(202);
    await settled(requirement.id, 1);
    return requirement;
  };
  /** Registers PR `number` for `owner` as its agent would, matching what the fake says. */
  const registerPullRequest = async (owner: { id: string; session: { id: string } }, number: number) => {
    const pr = github.pullRequest(REPO, number);
    const token = manager.app
      .get(RunCredentialsService)
      .issue({ requirementId: owner.id, runId: `run_pr_${number}`, sessionId: owner.session.id });
    const res = await apiClient(manager.url, { auth: token }).POST('/api/agent/pull-requests', {
      body: {
        baseBranch: pr.baseBranch,
        headBranch: pr.headBranch,
        headSha: pr.headSha,
        number,
        repository: REPO,
        requirementId: owner.id,
        status: 'open',
        title: pr.title,
        url: `https://github.com/${REPO}/pull/${number}`,
      },
    });
    expect(res.status).toBe(200);
    return pr;
  };

  beforeAll(async () => {
    process.env.GITHUB_TOKEN = TOKEN;
    sandbox = makeSandbox();
    github = await FakeGitHubServer.start({ token: TOKEN });
    await start();
  });

  afterAll(async () => {
    await manager?.stop();
    await github?.close();
    sandbox?.cleanup();
    process.env.GITHUB_TOKEN = savedToken;
  });

  it('refuses cycles (direct, indirect, self), unknown and repeated Requirements with 400', async () => {
    const a = await create('cycle a');
    const b = await create('cycle b', { dependsOn: [{ requirementId: a.id, until: 'merged' }] });
    const c = await create('cycle c', { dependsOn: [{ requirementId: b.id, until: 'done' }] });
    expect(b.dependsOn).toEqual([
      { reason: null, requirementId: a.id, resolvedAt: null, state: 'pending', until: 'merged' },
    ]);

    for (const [id, dependsOn] of [
      [a.id, [{ requirementId: b.id, until: 'done' }]],
      [a.id, [{ requirementId: c.id, until: 'merged' }]],
      [a.id, [{ requirementId: a.id, until: 'done' }]],
    ] as const) {
      const refused = await setDependencies(id, { dependsOn: [...dependsOn] });
      expect(refused.status).toBe(400);
      expect(refused.error?.code).toBe('dependency_cycle');
    }
    expect((await get(a.id)).dependsOn).toEqual([]);

    const unknown = await api().POST('/api/requirements', {
      body: {
        dependsOn: [{ requirementId: 'req_00000000000000000000000000', until: 'done' }],
        provider: 'codex',
        title: 'x',
      },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.error?.code).toBe('dependency_not_found');
    const twice = await setDependencies(c.id, {
      dependsOn: [
        { requirementId: a.id, until: 'done' },
        { requirementId: a.id, until: 'merged' },
      ],
    });
    expect(twice.error?.code).toBe('dependency_duplicate');
    // An unknown condition: untyped on purpose.
    const badCondition = await sendUntyped(manager.url, 'POST', '/api/requirements', {
      dependsOn: [{ requirementId: a.id, until: 'soon' }],
      provider: 'codex',
      title: 'x',
    });
    expect(badCondition.status).toBe(400);
  });

  it('refuses to start while a dependency is unmet (409 dependency_unmet, naming the blocking titles)', async () => {
    const dependency = await create('unmet dependency');
    const dependent = await create('blocked dependent', {
      dependsOn: [{ requirementId: dependency.id, until: 'done' }],
    });
    const refused = await startRequirement(dependent.id);
    expect(refused.status).toBe(409);
    expect(refused.error?.code).toBe('dependency_unmet');
    // Named by title, so a person reads what it waits for (issue 26 §6); the id stays for scripts.
    expect(refused.error?.message).toBe(
      `"blocked dependent" is blocked by "unmet dependency" (until done, ${dependency.id})`,
    );
    expect(await runs(dependent.id)).toEqual([]);
    expect((await get(dependent.id)).status).toBe('todo');
  });

  it('a merged dependency wakes the dependent that ran before exactly once, across restarts', async () => {
    const dependency = await ranOnce('ships the API');
    const dependent = await ranOnce('uses the API');
    const set = await setDependencies(dependent.id, { dependsOn: [{ requirementId: dependency.id, until: 'merged' }] });
    expect(set.status).toBe(200);
    expect((await startRequirement(dependent.id)).error?.code).toBe('dependency_unmet');

    github.addPullRequest({ number: 1, repository: REPO });
    github.addPullRequest({ number: 2, repository: REPO });
    const first = await registerPullRequest(dependency, 1);
    const second = await registerPullRequest(dependency, 2);
    await reconcile(); // baseline
    github.update(REPO, 1, { state: 'MERGED' });
    await reconcile();
    // One of two merged: still waiting.
    expect(await told(dependent.id)).toEqual([]);
    expect((await get(dependent.id)).dependsOn![0]).toMatchObject({ state: 'pending' });

    // The last merge happens while the manager is down; the next start's reconcile sees it.
    await manager.stop();
    github.update(REPO, 2, { state: 'MERGED' });
    await start();
    await reconcile();
    const [message] = await until('the dependency message', async () => {
      const messages = await told(dependent.id);
      return messages.length > 0 && messages;
    });
    expect(message).toMatchObject({
      author: 'system',
      deliverToRd: true,
      metadata: { dependencyRequirementId: dependency.id, event: 'met', until: 'merged' },
      source: 'dependency',
    });
    expect(message.body).toBe(
      `Dependency met: "ships the API" (${dependency.id}) ${REPO}#1 merged as ${first.headSha}, ${REPO}#2 merged as ${second.headSha}.`,
    );
    await settled(dependent.id, 2);
    expect((await get(dependent.id)).dependsOn).toEqual([
      expect.objectContaining({ requirementId: dependency.id, state: 'met' }),
    ]);

    // Nothing twice: not on another look, not on another start.
    await reconcile();
    await restart();
    await reconcile();
    expect(await told(dependent.id)).toHaveLength(1);
    expect(await runs(dependent.id)).toHaveLength(2);
  });

  it('a dependency confirmed done starts an autoStart dependent; one without autoStart is told and may be started', async () => {
    const dependency = await ranOnce('schema first');
    const auto = await create('auto after schema', {
      autoStart: true,
      dependsOn: [{ requirementId: dependency.id, until: 'done' }],
    });
    const manual = await create('manual after schema', {
      dependsOn: [{ requirementId: dependency.id, until: 'done' }],
    });
    expect(auto.autoStart).toBe(true);
    expect(
      (await api().POST('/api/requirements/{id}/confirm', { params: { path: { id: dependency.id } } })).status,
    ).toBe(200);

    await settled(auto.id, 1);
    const [autoMessage] = await told(auto.id);
    expect(autoMessage.body).toBe(`Dependency met: "schema first" (${dependency.id}) confirmed done.`);
    const manualTold = await until('the manual dependent told', async () => {
      const messages = await told(manual.id);
      return messages.length > 0 && messages;
    });
    expect(manualTold).toHaveLength(1);
    expect(await runs(manual.id)).toEqual([]);
    expect(await get(manual.id)).toMatchObject({ session: { pendingMessageCount: 1 }, status: 'todo' });
    // Met: the start is allowed now, and the run takes the message.
    expect((await startRequirement(manual.id)).status).toBe(202);
    await settled(manual.id, 1);
  });

  it('an agent proposes children that depend on each other; the second starts itself when the first is done', async () => {
    const parent = await ranOnce('plans the work');
    const token = manager.app
      .get(RunCredentialsService)
      .issue({ requirementId: parent.id, runId: 'run_planner', sessionId: parent.session.id });
    const propose = (body: Omit<Schemas['ProposeRequirementDto'], 'sourceSessionId'>) =>
      apiClient(manager.url, { auth: token }).POST('/api/agent/requirements', {
        body: { sourceSessionId: parent.session.id, ...body },
      });
    const first = await ok(propose({ title: 'step one' }));
    const second = await propose({
      autoStart: true,
      dependsOn: [{ requirementId: first.id, until: 'done' }],
      title: 'step two',
    });
    expect(second.status).toBe(201);
    expect(second.data).toMatchObject({
      autoStart: true,
      createdBy: 'rd_agent',
      dependsOn: [{ requirementId: first.id, state: 'pending', until: 'done' }],
      parentRequirementId: parent.id,
    });
    // Proposed with start: true while unmet: the child exists (todo), its start refused like a person's.
    const eager = await propose({
      dependsOn: [{ requirementId: first.id, until: 'done' }],
      start: true,
      title: 'too eager',
    });
    expect(eager.status).toBe(409);
    expect(eager.error?.code).toBe('dependency_unmet');

    expect((await startRequirement(first.id)).status).toBe(202);
    await settled(first.id, 1);
    expect((await api().POST('/api/requirements/{id}/confirm', { params: { path: { id: first.id } } })).status).toBe(
      200,
    );
    await settled(second.data!.id, 1);
    expect(await told(second.data!.id)).toHaveLength(1);
  });

  it('a cancelled dependency tells the dependent without waking it', async () => {
    const dependency = await create('withdrawn later');
    const dependent = await ranOnce('waits for the withdrawn one');
    await setDependencies(dependent.id, { dependsOn: [{ requirementId: dependency.id, until: 'done' }] });
    expect((await api().DELETE('/api/requirements/{id}', { params: { path: { id: dependency.id } } })).status).toBe(
      204,
    );
    const [message] = await until('the cancellation message', async () => {
      const messages = await told(dependent.id);
      return messages.length > 0 && messages;
    });
    expect(message).toMatchObject({ deliverToRd: true, metadata: { event: 'cancelled' } });
    expect(message.body).toContain('Dependency cancelled: "withdrawn later"');
    const after = await get(dependent.id);
    expect(after).toMatchObject({
      session: { pendingMessageCount: 1, state: 'waiting_human' },
      status: 'waiting_confirmation',
    });
    expect(after.dependsOn).toEqual([expect.objectContaining({ reason: 'cancelled', state: 'cancelled' })]);
    expect(await runs(dependent.id)).toHaveLength(1);
  });

  it('tells at the next start what a crash left untold (met, committed, not delivered)', async () => {
    const dependency = await ranOnce('crash source');
    const dependent = await create('crash dependent', {
      autoStart: true,
      dependsOn: [{ requirementId: dependency.id, until: 'done' }],
    });
    // What a crash between the two commits leaves: the dependency met, the dependent not told.
    await manager.app.get(Database).write(async (tx) => {
      await manager.app.get(DependenciesRepository).change(tx, dependent.id, dependency.id, {
        reason: 'confirmed done',
        resolvedAt: new Date().toISOString(),
        state: 'met',
      });
    });
    expect(await told(dependent.id)).toEqual([]);
    await restart();
    await settled(dependent.id, 1);
    expect(await told(dependent.id)).toHaveLength(1);
    await restart();
    expect(await told(dependent.id)).toHaveLength(1);
  });
});
