import type { INestApplicationContext } from '@nestjs/common';

import { Database } from '@server/core/database/database.service';
import { HUMAN_ACTOR, SYSTEM_ACTOR } from '@server/events/event-log.service';
import type { RegisterPullRequestDto } from '@server/pull-requests/dto/pull-request.dto';
import { GitHubPullRequestState, PullRequestsService } from '@server/pull-requests/pull-requests.service';
import type { RequirementResponseDto } from '@server/requirements/dto/requirement-response.dto';
import { RequirementsService } from '@server/requirements/requirements.service';

import { Workspace, describeStores, makeWorkspace, openServices, refusal, rows } from './harness';

jest.setTimeout(30_000);

const OWNER = { kind: 'owner' as const };
const HOUR_MS = 60 * 60 * 1000;

/**
 * Pull requests on PullRequestsService: registration is idempotent by repository (any case) and
 * number, sets the lifecycle once and binds the PR to one Requirement for good; GitHub's state,
 * as the reconciler applies it, changes the lifecycle with one event per visible change; which
 * PRs the reconciler looks at follows from their status and when they were last observed.
 */
describeStores('Pull requests', (kind) => {
  let workspace: Workspace;
  let app: INestApplicationContext;

  const pullRequests = () => app.get(PullRequestsService);
  const create = (title: string): Promise<RequirementResponseDto> =>
    app.get(RequirementsService).create({ createdBy: 'human', provider: 'codex', title }, HUMAN_ACTOR);
  const dto = (
    requirementId: string,
    number: number,
    extra: Partial<RegisterPullRequestDto> = {},
  ): RegisterPullRequestDto => ({
    baseBranch: 'main',
    headBranch: `feature-${number}`,
    headSha: 'aaaaaaa',
    number,
    repository: 'Org/Repo',
    requirementId,
    status: 'open',
    title: `PR ${number}`,
    url: `https://github.com/Org/Repo/pull/${number}`,
    ...extra,
  });
  const apply = (id: string, state: GitHubPullRequestState) =>
    app.get(Database).write((tx) => pullRequests().applyGitHubState(tx, id, state, SYSTEM_ACTOR));
  const prEvents = (requirementId: string) =>
    rows<{ type: string; payload: string }>(
      workspace,
      "SELECT type, payload FROM manager_event WHERE requirement_id = ? AND type LIKE 'pull_request.%' ORDER BY id",
      [requirementId],
    );

  beforeAll(async () => {
    workspace = makeWorkspace(kind);
    app = await openServices(workspace);
  });
  afterAll(async () => {
    await app?.close();
    workspace?.cleanup();
  });

  it('registers a PR once per repository and number, whatever the case; later registrations refresh metadata only; it belongs to one Requirement', async () => {
    const [owner, other] = [await create('owner'), await create('other')];
    const first = await pullRequests().register(dto(owner.id, 1), OWNER, HUMAN_ACTOR);
    expect(first).toMatchObject({ number: 1, repository: 'Org/Repo', requirementId: owner.id, status: 'open' });
    const again = await pullRequests().register(
      dto(owner.id, 1, { headSha: 'bbbbbbb', repository: 'org/repo', status: 'merged', title: 'renamed' }),
      OWNER,
      HUMAN_ACTOR,
    );
    expect(again).toMatchObject({
      headSha: 'bbbbbbb',
      id: first.id,
      repository: 'org/repo',
      status: 'open',
      title: 'renamed',
    });
    expect(await rows(workspace, 'SELECT id FROM pull_request')).toEqual([{ id: first.id }]);
    expect((await prEvents(owner.id)).map((e) => e.type)).toEqual(['pull_request.created', 'pull_request.updated']);

    expect(await refusal(pullRequests().register(dto(other.id, 1), OWNER, HUMAN_ACTOR))).toEqual({
      code: 'pull_request_owned',
      kind: 'conflict',
    });
    // A run may register PRs for its own Requirement only.
    const run = {
      kind: 'run' as const,
      scope: { requirementId: other.id, runId: 'run_x', sessionId: other.session.id },
    };
    expect(await refusal(pullRequests().register(dto(owner.id, 2), run, HUMAN_ACTOR))).toEqual({
      code: 'outside_run_scope',
      kind: 'forbidden',
    });
    expect(await pullRequests().register(dto(other.id, 2), run, HUMAN_ACTOR)).toMatchObject({
      number: 2,
      requirementId: other.id,
    });
    expect(
      await rows(workspace, 'SELECT requirement_id AS "requirementId", title FROM pull_request ORDER BY number'),
    ).toEqual([
      { requirementId: owner.id, title: 'renamed' },
      { requirementId: other.id, title: 'PR 2' },
    ]);
  });

  it("applies GitHub's state: an event per visible change with the previous status, none when nothing changed", async () => {
    const requirement = await create('reconciled');
    const pr = await pullRequests().register(dto(requirement.id, 10), OWNER, HUMAN_ACTOR);
    const state: GitHubPullRequestState = {
      baseBranch: 'main',
      headBranch: 'feature-10',
      headSha: 'aaaaaaa',
      status: 'open',
      title: 'PR 10',
      url: pr.url,
    };
    expect(await apply(pr.id, state)).toMatchObject({ status: 'open' });
    expect(await prEvents(requirement.id)).toHaveLength(1); // the registration's only

    expect(await apply(pr.id, { ...state, status: 'closed' })).toMatchObject({ status: 'closed' });
    expect(await apply(pr.id, { ...state, headSha: 'ccccccc', status: 'merged' })).toMatchObject({
      headSha: 'ccccccc',
      status: 'merged',
    });
    const updates = (await prEvents(requirement.id))
      .slice(1)
      .map((e) => JSON.parse(e.payload) as { previousStatus: string; pullRequest: { status: string } });
    expect(updates.map((u) => [u.previousStatus, u.pullRequest.status])).toEqual([
      ['open', 'closed'],
      ['closed', 'merged'],
    ]);
    expect(await apply('pullRequest_unknown', state)).toBeNull();
  });

  it('tracks open and draft PRs always, a closed one again once its recheck time has passed, a merged one never', async () => {
    const requirement = await create('tracked');
    const [open, draft, closed, merged] = await Promise.all(
      [
        { number: 20, status: 'open' as const },
        { number: 21, status: 'draft' as const },
        { number: 22, status: 'closed' as const },
        { number: 23, status: 'merged' as const },
      ].map(({ number, status }) =>
        pullRequests().register(dto(requirement.id, number, { repository: 'Org/Tracked', status }), OWNER, HUMAN_ACTOR),
      ),
    );
    const ours = async (recheckMs: number) =>
      (await pullRequests().tracked(recheckMs, 100))
        .filter((p) => p.repository === 'Org/Tracked')
        .map((p) => p.id)
        .sort();
    // Never observed: every closed one is due.
    expect(await ours(HOUR_MS)).toEqual([open.id, draft.id, closed.id].sort());
    await pullRequests().markObserved(closed.id, { fingerprint: 'f1', mergeable: 'MERGEABLE' });
    expect(await ours(HOUR_MS)).toEqual([open.id, draft.id].sort());
    expect(await ours(0)).toEqual([open.id, draft.id, closed.id].sort());
    expect(await ours(0)).not.toContain(merged.id);
  });
});
