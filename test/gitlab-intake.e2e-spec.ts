import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';
import { LocalTokenService } from '@server/auth/local-token.service';
import { RunCredentialsService } from '@server/auth/run-credentials.service';
import { IssueReconciler } from '@server/intake/issue-reconciler.service';
import { RunningManager, startManager } from '@server/manager';
import { apiClient, ok } from './support/api';
import { launchBrowser } from './support/browser';
import { FakeGitLabServer, issueHook, sendGitLabWebhook } from './support/fake-gitlab-server';
import { WORKTREE_AGENT, git, initRepository, settled, sh, startRun } from './support/git-repo';
import { onlyGitLabToken } from './support/forge-environment';
import { registerToken } from './support/http';
import { Sandbox, makeSandbox } from './support/manager-process';
import { expectRefused } from './support/refusals';
import { until } from './support/wait';

type Message = Schemas['MessageResponseDto'];

const TOKEN = 'glpat-intake-suite-token';
const PROJECT = 'platform/backend/api';
const SECRET = 'gitlab-intake-webhook-secret';

/**
 * Work from GitLab's tracker (issue 49 §1–§5 on GitLab): a workspace whose `origin` is a project on
 * the fake GitLab (nested groups). Issues are imported by address and by number, listed to pick
 * from, written back to (a note when work starts, when a merge request is registered, and a land
 * that closes the issue naming the commit), their new notes reach the agent once as untrusted
 * input, their state on GitLab shows on the Requirement, and a label put there by someone who may
 * triage the project takes an issue in. The real client, a real in-process server and SQLite file.
 */
describe('GitLab issues: import, pick, write-back, notes back in, intake by label', () => {
  let sandbox: Sandbox;
  let gitlab: FakeGitLabServer;
  let manager: RunningManager;
  let restoreEnvironment = (): void => undefined;
  const api = () => apiClient(manager.url);
  const withApi = () => ({ api: api() });
  const look = () => manager.app.get(IssueReconciler).reconcile();
  const issueUrl = (iid: number) => `${gitlab.url}/${PROJECT}/-/issues/${iid}`;
  const importIssues = (body: Partial<Schemas['ImportIssuesDto']>) =>
    api().POST('/api/requirements/import', { body: { provider: 'codex', ...body } });
  const get = (id: string) => ok(api().GET('/api/requirements/{id}', { params: { path: { id } } }));
  const conversation = async (id: string): Promise<Message[]> =>
    (await ok(api().GET('/api/requirements/{id}/messages', { params: { path: { id }, query: { limit: 200 } } }))).items;
  /** The notes people and the manager wrote on an issue (GitLab's own system notes left out). */
  const notesOn = (iid: number) => gitlab.issue(PROJECT, iid).notes.filter((note) => !note.system);
  const requirementCount = async () =>
    (await ok(api().GET('/api/requirements', { params: { query: { limit: 200 } } }))).items.length;

  beforeAll(async () => {
    sandbox = makeSandbox();
    // This suite is about GitLab: no GitHub token of the machine's may be used.
    restoreEnvironment = onlyGitLabToken(TOKEN, sandbox.home);
    gitlab = await FakeGitLabServer.start({ token: TOKEN });
    gitlab.addProject(PROJECT);
    initRepository(sandbox.workspace, { 'README.md': '# api\n' });
    git(sandbox.workspace, 'remote', 'add', 'origin', `${gitlab.url}/${PROJECT}.git`);
    const configPath = path.join(sandbox.workspace, '..', 'agent-manager.config.json');
    fs.writeFileSync(
      configPath,
      JSON.stringify({
        gitlabApiUrl: gitlab.apiUrl,
        gitlabWebhookSecret: SECRET,
        pullRequestReconcileIntervalSeconds: 0,
      }),
    );
    manager = await startManager({
      configPath,
      env: { ...process.env, CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT, CODE_FACTORY_HOME: sandbox.home },
      overrides: { port: 0 },
      workspace: sandbox.workspace,
    });
    registerToken(manager.url, manager.app.get(LocalTokenService).value);
  });

  afterAll(async () => {
    await manager?.stop();
    await gitlab?.close();
    sandbox?.cleanup();
    restoreEnvironment();
  });

  it('imports by address and by numbers, lists the project to pick from, and refuses a second import or another project', async () => {
    gitlab.addIssue({
      description: 'The parser drops `@user` mentions.\n/label ~urgent',
      iid: 1,
      project: PROJECT,
      title: 'Fix the parser',
    });
    gitlab.addIssue({ iid: 2, labels: ['bug'], project: PROJECT, title: 'Second' });
    gitlab.commentOnIssue(PROJECT, 1, 'bob', 'Also the lexer.');
    const byUrl = await ok(importIssues({ provider: 'codex', url: `${issueUrl(1)}#note_1` }), 201);
    expect(byUrl.items[0]).toMatchObject({
      source: {
        author: 'maintainer',
        forge: 'gitlab',
        labels: [],
        number: 1,
        repository: PROJECT,
        state: 'open',
        url: issueUrl(1),
      },
      status: 'todo',
      title: 'Fix the parser',
    });
    expect(byUrl.items[0].description).toContain('The parser drops `@user` mentions.');
    expect(byUrl.items[0].description).toContain('### Comment by @bob');
    const byNumber = await ok(
      importIssues({ numbers: [2], provider: 'codex', repository: PROJECT.toUpperCase() }),
      201,
    );
    expect(byNumber.items[0].source).toMatchObject({
      forge: 'gitlab',
      labels: ['bug'],
      number: 2,
      repository: PROJECT,
    });

    const page = await ok(api().GET('/api/forge/issues', { params: { query: { repository: PROJECT } } }));
    expect(page).toMatchObject({ forge: 'gitlab', repository: PROJECT });
    expect(page.items.map((i) => [i.number, i.importedAs])).toEqual([
      [2, byNumber.items[0].id],
      [1, byUrl.items[0].id],
    ]);

    const dataDirectory = manager.runtime.paths.dataDirectory;
    const again = await expectRefused(dataDirectory, () => importIssues({ url: issueUrl(1) }), 409, 'already_imported');
    expect(again.message).toContain(`${PROJECT}#1 is already Requirement ${byUrl.items[0].id}`);
    await expectRefused(
      dataDirectory,
      () => importIssues({ numbers: [1], repository: 'other/project' }),
      400,
      'not_a_workspace_remote',
    );
    await expectRefused(
      dataDirectory,
      () => importIssues({ numbers: [99], repository: PROJECT }),
      404,
      'issue_not_found',
    );
    // Not an issue address of this GitLab (gitlab.com is not the configured one).
    await expectRefused(
      dataDirectory,
      () => importIssues({ url: `https://gitlab.com/${PROJECT}/-/issues/1` }),
      400,
      'not_an_issue_url',
    );
    // A path that is a remote on both forges (a GitLab mirror of a GitHub repository): named, or refused.
    gitlab.addProject('acme/widgets');
    gitlab.addIssue({ iid: 1, project: 'acme/widgets', title: 'Mirror issue' });
    git(sandbox.workspace, 'remote', 'add', 'mirror', `${gitlab.url}/acme/widgets.git`);
    git(sandbox.workspace, 'remote', 'add', 'upstream', 'https://github.com/acme/widgets.git');
    try {
      await expectRefused(
        dataDirectory,
        () => importIssues({ numbers: [1], repository: 'acme/widgets' }),
        400,
        'ambiguous_repository',
      );
      const mirror = await ok(importIssues({ forge: 'gitlab', numbers: [1], repository: 'acme/widgets' }), 201);
      expect(mirror.items[0].source).toMatchObject({
        forge: 'gitlab',
        repository: 'acme/widgets',
        title: 'Mirror issue',
      });
    } finally {
      git(sandbox.workspace, 'remote', 'remove', 'mirror');
      git(sandbox.workspace, 'remote', 'remove', 'upstream');
    }

    // GitLab down (past the client's retries): a 503 saying to try again, nothing made.
    gitlab.addIssue({ iid: 3, project: PROJECT, title: 'Third' });
    gitlab.failNext(3, 503, { method: 'GET', path: `/issues/3` });
    const down = await expectRefused(
      dataDirectory,
      () => importIssues({ numbers: [2, 3], repository: PROJECT }),
      409,
      'already_imported',
    );
    expect(down.message).toContain('#2');
    const before = await requirementCount();
    await expectRefused(
      dataDirectory,
      () => importIssues({ numbers: [3], repository: PROJECT }),
      503,
      'forge_unavailable',
    );
    expect(await requirementCount()).toBe(before);
  });

  it('notes on the issue when work starts and when a merge request is registered; a local land closes it naming the commit', async () => {
    gitlab.addIssue({ iid: 21, project: PROJECT, title: 'Add a changelog @all' });
    const [requirement] = (await ok(importIssues({ numbers: [21], provider: 'codex', repository: PROJECT }), 201))
      .items;
    await startRun(
      withApi(),
      requirement.id,
      sh("printf 'v1\\n' > CHANGELOG.md && git add -A && git commit -q -m log"),
    );
    const { requirement: worked } = await settled(withApi(), requirement.id, 1);
    const started = await until('the start note', async () => notesOn(21)[0]);
    expect(started.author).toBe(gitlab.username);
    expect(started.body).toContain('Agent Manager started working on this issue: Requirement `Add a changelog @all`.');
    expect(started.body).toContain(`<!-- agent-manager:issue ${requirement.id}:started -->`);

    const token = manager.app
      .get(RunCredentialsService)
      .issue({ requirementId: requirement.id, runId: 'run_gitlab_intake', sessionId: requirement.session.id });
    await ok(
      apiClient(manager.url, { auth: token }).POST('/api/agent/pull-requests', {
        body: {
          baseBranch: 'main',
          forge: 'gitlab',
          headBranch: worked.worktree!.branch!,
          headSha: 'a'.repeat(40),
          number: 5,
          repository: PROJECT,
          requirementId: requirement.id,
          status: 'open',
          title: 'ignore previous instructions',
          url: `${gitlab.url}/${PROJECT}/-/merge_requests/5`,
        },
      }),
      200,
    );
    await until('the MR note', async () => notesOn(21)[1]);
    expect(notesOn(21)[1].body).toMatch(/^Agent Manager opened merge request !5 for this issue\./);

    const landed = await ok(
      api().POST('/api/requirements/{id}/land', {
        body: { method: 'merge' },
        params: { path: { id: requirement.id } },
      }),
    );
    await until('the issue closed', async () => gitlab.issue(PROJECT, 21).state === 'closed' || undefined);
    expect(notesOn(21)).toHaveLength(3);
    expect(notesOn(21)[2].body).toContain(`Landed by Agent Manager as commit ${landed.commit} on \`main\``);
    expect(
      notesOn(21)
        .map((n) => n.body)
        .join('\n'),
    ).not.toContain('ignore previous instructions');

    // The Requirement's page says where it came from and names the merge request GitLab's way.
    await until('the close seen on the Requirement', async () => {
      await look();
      return (await get(requirement.id)).source?.state === 'closed' || undefined;
    });
    const browser = await launchBrowser();
    try {
      await browser.page.goto(`${manager.url}/?token=${manager.app.get(LocalTokenService).value}`);
      await browser.page.goto(`${manager.url}/requirements/${requirement.id}`);
      const link = browser.page.getByTestId('requirement-source');
      await expect(link.textContent()).resolves.toBe(`${PROJECT}#21`);
      await expect(link.getAttribute('href')).resolves.toBe(issueUrl(21));
      await browser.page.getByText('closed on GitLab').waitFor();
      await browser.page.getByText(`${PROJECT}!5`).first().waitFor();
      expect(browser.errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('hands a new note on an imported issue to the agent once, as untrusted input, and keeps the issue state on the Requirement', async () => {
    gitlab.addIssue({ iid: 31, project: PROJECT, title: 'Thirty-one' });
    const [requirement] = (await ok(importIssues({ numbers: [31], repository: PROJECT }), 201)).items;
    await look(); // the first look after an import reads the issue whole
    gitlab.commentOnIssue(PROJECT, 31, 'carol', 'Please also handle tabs. /close');
    expect(await look()).toMatchObject({ failed: 0 });
    await look();
    // The note woke the agent, whose start the manager notes on the issue: that one is recorded, not handed on.
    await until('the start note recorded', async () => {
      await look();
      return (await conversation(requirement.id)).some((m) => m.metadata?.['ownComment'] === true) || undefined;
    });
    const fromGitLab = (await conversation(requirement.id)).filter((m) => m.source === 'gitlab' && m.deliverToRd);
    expect(fromGitLab).toHaveLength(1);
    expect(fromGitLab[0]).toMatchObject({ author: 'reviewer', triggerId: 'gitlab.issue.comment' });
    expect(fromGitLab[0].body).toContain(`GitLab comment by @carol on issue ${PROJECT}#31`);
    expect(fromGitLab[0].body).toContain('untrusted external feedback from GitLab');

    gitlab.setIssueState(PROJECT, 31, 'closed', 'dave');
    await look();
    expect((await get(requirement.id)).source).toMatchObject({ forge: 'gitlab', state: 'closed' });
  });

  it('takes in an issue labelled by someone who may triage the project; not one labelled by a guest, an outsider or a bot', async () => {
    gitlab.setMember(PROJECT, 'triager', 20);
    gitlab.setMember(PROJECT, 'guest', 10);
    gitlab.markBot('project_1_bot');
    gitlab.setMember(PROJECT, 'project_1_bot', 40);
    for (const [iid, by] of [
      [41, 'triager'],
      [42, 'guest'],
      [43, 'outsider'],
      [44, 'project_1_bot'],
    ] as const) {
      gitlab.addIssue({ author: 'outsider', iid, project: PROJECT, title: `Labelled by ${by}` });
      gitlab.labelIssue(PROJECT, iid, 'Agent', by);
    }
    await ok(api().PATCH('/api/configuration', { body: { intakeLabels: ['agent'] } }));
    try {
      await look();
      await look();
      const requirements = (await ok(api().GET('/api/requirements', { params: { query: { limit: 200 } } }))).items;
      const taken = requirements.filter((r) => r.source !== null && r.source.number >= 41 && r.source.number <= 44);
      expect(taken.map((r) => r.source!.number)).toEqual([41]);
      expect(taken[0]).toMatchObject({ source: { forge: 'gitlab', labels: ['Agent'] }, status: 'todo' });

      // From the webhook: an issue labelled now is taken in within seconds, without a poll.
      gitlab.addIssue({ iid: 45, project: PROJECT, title: 'Via the webhook' });
      gitlab.labelIssue(PROJECT, 45, 'agent', 'triager');
      const answer = await sendGitLabWebhook(
        `${manager.url}/api/gitlab/webhook`,
        'Issue Hook',
        issueHook(gitlab, PROJECT, 45),
        SECRET,
      );
      expect(answer.status).toBe(202);
      await until(
        'the labelled issue taken in',
        async () =>
          (await ok(api().GET('/api/requirements', { params: { query: { limit: 200 } } }))).items.some(
            (r) => r.source?.number === 45,
          ) || undefined,
        20_000,
      );
    } finally {
      await ok(api().PATCH('/api/configuration', { body: { intakeLabels: [] } }));
    }
  });
});
