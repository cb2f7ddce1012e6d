import { LocalTokenService } from '../../server/src/auth/local-token.service';
import { RunCredentialsService } from '../../server/src/auth/run-credentials.service';
import { CONFIGURATION_DEFAULTS } from '../../server/src/core/configuration/configuration.schema';
import { PullRequestReconciler } from '../../server/src/forges/pull-request-reconciler.service';
import { IssueReconciler } from '../../server/src/intake/issue-reconciler.service';
import { startManager } from '../../server/src/manager';
import { FakeGitHubServer, githubLikeGraphqlCost } from '../../test/support/fake-github-server';
import { registerToken, send } from '../../test/support/http';
import { git, initRepository } from '../../test/support/git-repo';
import { IDLE_AGENT, makeSandbox } from '../../test/support/manager-process';
import { ScenarioResult, progress, round } from '../harness';

const PULL_REQUESTS = 500;
const PER_REQUIREMENT = 10;
const TOKEN = 'ghp_bench_token';
/** Share of PRs with something new on GitHub each tick in the "busy" case. */
const CHURN = 0.1;
const PRIMARY_BUDGET = 5_000;
/** Requirements imported from issues (of the workspace's remote, org/repo0), with intake by label on too. */
const FROM_ISSUES = 20;
/** Issue numbers apart from the PRs'. */
const FIRST_ISSUE = 10_001;

/**
 * `github-budget`: 500 tracked PRs on the fake GitHub, the real client and reconciler. Counts
 * requests (and GitHub-modelled GraphQL points) per tick when nothing changed and when 10% of
 * the PRs changed, and scales them to an hour at the default interval. Issue 49: 20 of the
 * Requirements are imported from issues of the workspace's remote and intake by label is on;
 * the issues' look runs beside every tick (10% of the issues get a comment in the busy one), and
 * the hour is counted with it too: target at most +20%.
 */
export async function githubBudgetScenario(): Promise<ScenarioResult> {
  const github = await FakeGitHubServer.start({ graphqlCost: githubLikeGraphqlCost, token: TOKEN });
  const sandbox = makeSandbox();
  const saved = process.env.GITHUB_TOKEN;
  process.env.GITHUB_TOKEN = TOKEN;
  initRepository(sandbox.workspace);
  git(sandbox.workspace, 'remote', 'add', 'origin', `${github.url}/org/repo0.git`);
  for (let i = 0; i < FROM_ISSUES; i++) {
    github.addIssue({ body: `Issue ${i}.`, number: FIRST_ISSUE + i, repository: 'org/repo0', title: `issue ${i}` });
  }
  const manager = await startManager({
    env: { ...process.env, CODE_FACTORY_CODEX_EXECUTABLE: IDLE_AGENT, CODE_FACTORY_HOME: sandbox.home },
    overrides: {
      githubApiUrl: github.url,
      intakeLabels: ['agent'],
      logLevel: 'warn',
      port: 0,
      pullRequestReconcileIntervalSeconds: 0,
    },
    workspace: sandbox.workspace,
  });
  try {
    registerToken(manager.url, manager.app.get(LocalTokenService).value);
    const credentials = manager.app.get(RunCredentialsService);
    progress(`github-budget: registering ${PULL_REQUESTS} PRs`);
    for (let r = 0; r < PULL_REQUESTS / PER_REQUIREMENT; r++) {
      // The first ones from issues of the workspace's remote (org/repo0), the rest typed by hand.
      const requirement =
        r < FROM_ISSUES
          ? (
              await send(manager.url, 'POST', '/api/requirements/import', {
                numbers: [FIRST_ISSUE + r],
                provider: 'codex',
                repository: 'org/repo0',
              })
            ).json.items[0]
          : (await send(manager.url, 'POST', '/api/requirements', { provider: 'codex', title: `work ${r}` })).json;
      const token = credentials.issue({
        requirementId: requirement.id,
        runId: `run_bench_${r}`,
        sessionId: requirement.session.id,
      });
      await Promise.all(
        Array.from({ length: PER_REQUIREMENT }, async (_, i) => {
          const number = r * PER_REQUIREMENT + i + 1;
          const pr = github.addPullRequest({ number, repository: `org/repo${r % 7}` });
          const res = await send(
            manager.url,
            'POST',
            '/api/agent/pull-requests',
            {
              baseBranch: pr.baseBranch,
              headBranch: pr.headBranch,
              headSha: pr.headSha,
              number,
              repository: `org/repo${r % 7}`,
              requirementId: requirement.id,
              status: 'open',
              title: pr.title,
              url: `https://github.com/org/repo${r % 7}/pull/${number}`,
            },
            { Authorization: `Bearer ${token}` },
          );
          if (res.status !== 200) {
            throw new Error(`registration failed: ${res.status} ${res.text}`);
          }
        }),
      );
    }
    const reconciler = manager.app.get(PullRequestReconciler);
    const issues = manager.app.get(IssueReconciler);
    const tick = async (label: string) => {
      github.resetCounts();
      const started = performance.now();
      const report = await reconciler.reconcile();
      const ms = performance.now() - started;
      const counts = github.counts();
      // The issues' look beside it (the same interval), counted apart.
      github.resetCounts();
      const looked = await issues.reconcile();
      const issueRequests = github.counts().total;
      progress(
        `github-budget: ${label}: ${counts.total} requests, ${counts.graphqlCost} points, ${Math.round(ms)} ms, ${report.deliveries} messages; issues: ${issueRequests} requests, ${looked.comments} comments`,
      );
      return { counts, issueRequests, ms, report };
    };
    const baseline = await tick('first tick (baseline)');
    const quiet = await tick('quiet tick');
    const changed = Math.round(PULL_REQUESTS * CHURN);
    for (let n = 1; n <= changed; n++) {
      github.addComment(`org/repo${Math.floor((n * 10 - 1) / PER_REQUIREMENT) % 7}`, n * 10, {
        author: 'reviewer',
        body: `comment ${n}`,
      });
    }
    for (let i = 0; i < FROM_ISSUES * CHURN; i++) {
      github.commentOnIssue('org/repo0', FIRST_ISSUE + i * 10, 'someone', `issue comment ${i}`);
    }
    const busy = await tick(`busy tick (${changed} PRs changed)`);
    const ticksPerHour = 3600 / CONFIGURATION_DEFAULTS.pullRequestReconcileIntervalSeconds;
    const quietHour = quiet.counts.total * ticksPerHour;
    const busyHour = busy.counts.total * ticksPerHour;
    const busyHourWithIssues = (busy.counts.total + busy.issueRequests) * ticksPerHour;
    const quietHourWithIssues = (quiet.counts.total + quiet.issueRequests) * ticksPerHour;
    return {
      figures: [
        {
          name: 'requests, first tick (baseline: summaries + every snapshot)',
          unit: 'requests',
          value: baseline.counts.total,
        },
        { name: 'requests per quiet tick (summaries only)', unit: 'requests', value: quiet.counts.total },
        { name: `requests per busy tick (${CHURN * 100}% of PRs changed)`, unit: 'requests', value: busy.counts.total },
        {
          name: `requests per hour, busy every tick, at the default ${CONFIGURATION_DEFAULTS.pullRequestReconcileIntervalSeconds} s`,
          target: { op: '<=', value: PRIMARY_BUDGET / 5 },
          unit: 'requests',
          value: busyHour,
        },
        {
          name: 'headroom vs 5,000 requests/hour (busy)',
          target: { op: '>=', value: 5 },
          unit: 'x',
          value: round(PRIMARY_BUDGET / busyHour, 1),
        },
        { name: 'headroom vs 5,000 requests/hour (quiet)', unit: 'x', value: round(PRIMARY_BUDGET / quietHour, 1) },
        {
          name: `requests per hour, busy, with ${FROM_ISSUES} Requirements from issues and intake by label on`,
          unit: 'requests',
          value: busyHourWithIssues,
        },
        {
          name: 'busy hour with issues / without',
          target: { op: '<=', value: 1.2 },
          unit: 'x',
          value: round(busyHourWithIssues / busyHour, 2),
        },
        {
          name: 'requests per hour, quiet, with issues (an unchanged repository is a free 304, counted)',
          unit: 'requests',
          value: quietHourWithIssues,
        },
        {
          name: 'GraphQL points per hour, busy (GitHub formula, modelled)',
          unit: 'points',
          value: busy.counts.graphqlCost * ticksPerHour,
        },
        {
          name: 'GraphQL points per hour, quiet (modelled)',
          unit: 'points',
          value: quiet.counts.graphqlCost * ticksPerHour,
        },
        { name: 'tick duration, quiet', unit: 'ms', value: Math.round(quiet.ms) },
        { name: 'tick duration, busy', unit: 'ms', value: Math.round(busy.ms) },
        { name: 'tick duration, first (baseline)', unit: 'ms', value: Math.round(baseline.ms) },
      ],
      notes: [
        `Issues: ${baseline.issueRequests} requests at the first look (the label scan included), ${quiet.issueRequests} per quiet look, ${busy.issueRequests} per busy look (${FROM_ISSUES * CHURN} issues with a new comment). Write-back is per event, not per tick: a comment at the start, one at the first PR, a comment and a close at a land (4 requests per Requirement's life).`,
        `${busy.report.deliveries} messages delivered in the busy tick; the GitHub client spaces GraphQL requests 1 s apart (Octokit throttling), which sets the tick duration.`,
      ],
      scenario: 'github-budget',
    };
  } finally {
    await manager.stop();
    await github.close();
    sandbox.cleanup();
    process.env.GITHUB_TOKEN = saved;
  }
}
