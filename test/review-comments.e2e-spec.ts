import { spawn } from 'node:child_process';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';
import { RunCredentialsService } from '@server/auth/run-credentials.service';
import type { RunningManager } from '@server/manager';

import { apiClient, ok, refusal } from './support/api';
import { createRequirement, initRepository, runsOf, settled, sh, startRun } from './support/git-repo';
import { startWorktreeManager } from './support/in-process';
import { ROOT, Sandbox, makeSandbox } from './support/manager-process';
import { expectRefused } from './support/refusals';
import { until } from './support/wait';

type Comment = Schemas['ReviewCommentDto'];

// Issue 46 §1–3: a person's review of an agent's changes as draft comments on lines, sent as one
// message delivered as a reply is, threads the agent answers through its API and the
// code-factory-cli, and that follow the code from import to import. A real in-process server, a
// real repository and SQLite file, the synthetic worktree agent (it runs the `sh:` command of its
// latest message) as a real child process; the real CLIs are in mcp-agent-tools.e2e-spec.ts.

jest.setTimeout(120_000);

const CLI = path.join(ROOT, 'bin', 'code-factory-cli.js');
const lines = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`).join('\n') + '\n';

describe('review comments on a Requirement’s changes', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  const api = () => apiClient(manager.url);
  const withApi = () => ({ api: api() });
  let requirementId: string;
  let dataDirectory: string;

  const comment = (body: Partial<Schemas['CreateReviewCommentDto']>) =>
    api().POST('/api/requirements/{id}/review-comments', {
      body: { body: 'A comment', line: 12, path: 'src/app.ts', ...body },
      params: { path: { id: requirementId } },
    });
  const list = async (state?: Comment['state']): Promise<Comment[]> =>
    (
      await ok(
        api().GET('/api/requirements/{id}/review-comments', {
          params: { path: { id: requirementId }, query: state ? { state } : {} },
        }),
      )
    ).items;
  const byId = async (id: string): Promise<Comment> => (await list()).find((c) => c.id === id)!;

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, {
      'README.md': '# repo\n',
      'notes/old.md': 'first\nsecond\nthird\nfourth\nfifth\n',
      'src/app.ts': lines(1, 30),
    });
    manager = await startWorktreeManager(sandbox);
    dataDirectory = manager.runtime.paths.dataDirectory;
    // The agent's first run: line 12 changed, two lines added after line 20, notes/old.md's third line removed.
    requirementId = (await createRequirement(withApi(), { title: 'Review me' })).id;
    await startRun(
      withApi(),
      requirementId,
      sh(
        [
          "sed -i 's/^line 12$/line 12 changed/; s/^line 20$/line 20\\nnew A\\nnew B/' src/app.ts",
          "sed -i '/^third$/d' notes/old.md",
          'git commit -qam "first pass"',
        ].join(' && '),
      ),
    );
    await settled(withApi(), requirementId, 1);
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('refuses a comment off the diff or with a bad body, naming what, and writes nothing', async () => {
    const refused = (body: Partial<Schemas['CreateReviewCommentDto']>, status: number, code?: string) =>
      expectRefused(dataDirectory, () => comment(body), status, code);
    expect((await refused({ path: 'src/other.ts' }, 400, 'not_in_diff')).message).toContain('src/other.ts');
    expect((await refused({ path: 'README.md' }, 400, 'not_in_diff')).message).toContain('README.md');
    expect((await refused({ line: 1 }, 400, 'not_in_diff')).message).toContain('line 1 of src/app.ts');
    expect((await refused({ line: 500 }, 400, 'not_in_diff')).message).toContain('line 500');
    await refused({ endLine: 40, line: 20 }, 400, 'not_in_diff');
    await refused({ endLine: 11, line: 12 }, 400, 'invalid_range');
    await refused({ line: 5, path: 'notes/old.md' }, 400, 'not_in_diff'); // four lines are left on the new side
    await refused({ line: 2, path: 'src/app.ts', side: 'old' }, 400, 'not_in_diff'); // not in a hunk
    await refused({ path: '../outside.ts' }, 400, 'not_in_diff');
    await refused({ body: '' }, 400);
    await refused({ body: '   \n' }, 400);
    await refused({ body: 'é'.repeat(5121) }, 400, 'comment_too_long'); // 10,242 bytes
    await refused({ line: 0 }, 400);
    await refused({ side: 'both' as 'new' }, 400);
    await expectRefused(
      dataDirectory,
      () =>
        api().POST('/api/requirements/{id}/review-comments', {
          body: { body: 'x', line: 12, path: 'src/app.ts' },
          params: { path: { id: 'req_00000000-0000-4000-8000-000000000000' } },
        }),
      404,
    );
    expect(await list()).toEqual([]);
  });

  it('drafts, edits and deletes comments, sends them as one review the agent takes as one message, and keeps the threads on their lines', async () => {
    const requirement = await ok(api().GET('/api/requirements/{id}', { params: { path: { id: requirementId } } }));
    const work = requirement.worktree!.workSha!;
    const single = await ok(comment({ body: 'Why "changed"?', line: 12 }), 201);
    expect(single).toMatchObject({
      anchor: { commit: work, excerpt: 'line 12 changed' },
      author: { kind: 'person' },
      endLine: 12,
      line: 12,
      messageId: null,
      path: 'src/app.ts',
      replies: [],
      requirementId,
      side: 'new',
      state: 'draft',
    });
    const range = await ok(comment({ body: 'Name these two.', endLine: 22, line: 20 }), 201);
    expect(range.anchor.excerpt).toBe('line 20\nnew A\nnew B');
    const old = await ok(comment({ body: 'Keep this line.', line: 3, path: 'notes/old.md', side: 'old' }), 201);
    expect(old.anchor).toEqual({ commit: requirement.worktree!.baseSha, excerpt: 'third' });
    const later = await ok(comment({ body: 'Not yet.', line: 13 }), 201);
    const dropped = await ok(comment({ body: 'Never mind.', line: 14 }), 201);

    // A draft's text changes; a draft is neither resolved nor reopened; one change at a time.
    expect(
      await ok(
        api().PATCH('/api/requirements/{id}/review-comments/{commentId}', {
          body: { body: 'Why "changed", and not "edited"?' },
          params: { path: { commentId: single.id, id: requirementId } },
        }),
      ),
    ).toMatchObject({ body: 'Why "changed", and not "edited"?', state: 'draft' });
    const patch = (commentId: string, body: Schemas['UpdateReviewCommentDto']) =>
      api().PATCH('/api/requirements/{id}/review-comments/{commentId}', {
        body,
        params: { path: { commentId, id: requirementId } },
      });
    await expectRefused(dataDirectory, () => patch(single.id, { state: 'resolved' }), 409, 'comment_not_sent');
    await expectRefused(dataDirectory, () => patch(single.id, { body: 'x', state: 'open' }), 400, 'one_change');
    await expectRefused(dataDirectory, () => patch(single.id, {}), 400, 'one_change');
    await expectRefused(
      dataDirectory,
      () => patch('rvc_00000000-0000-4000-8000-000000000000', { body: 'x' }),
      404,
      'review_comment_not_found',
    );
    expect(
      (
        await api().DELETE('/api/requirements/{id}/review-comments/{commentId}', {
          params: { path: { commentId: dropped.id, id: requirementId } },
        })
      ).status,
    ).toBe(204);
    expect((await list('draft')).map((c) => c.id)).toEqual([single.id, range.id, old.id, later.id]);

    // Both files viewed as they are now; a path off the diff is refused.
    const markViewed = (path: string, viewed = true) =>
      api().PUT('/api/requirements/{id}/viewed-files', {
        body: { path, viewed },
        params: { path: { id: requirementId } },
      });
    await ok(markViewed('src/app.ts'));
    expect(await ok(markViewed('notes/old.md'))).toMatchObject({
      fileCount: 2,
      items: [
        { path: 'notes/old.md', viewed: true },
        { path: 'src/app.ts', viewed: true },
      ],
      viewedCount: 2,
    });
    await expectRefused(dataDirectory, () => markViewed('README.md'), 400, 'not_in_diff');

    // Three of the four drafts go as one review; the overall comment carries what the agent does next.
    const next = sh(
      [
        "printf 'h1\\nh2\\nh3\\nh4\\nh5\\n' | cat - src/app.ts > /tmp/moved && cat /tmp/moved > src/app.ts",
        "sed -i 's/^new B$/new B2/' src/app.ts",
        'git commit -qam "second pass"',
      ].join(' && '),
    );
    const sent = await ok(
      api().POST('/api/requirements/{id}/reviews', {
        body: { body: `Overall: close. ${next}`, commentIds: [single.id, range.id, old.id] },
        params: { path: { id: requirementId } },
      }),
      202,
    );
    expect(sent).toMatchObject({ accepted: true, queued: false, requirementId });
    expect(sent.reviewComments.map((c) => [c.id, c.state, c.messageId])).toEqual([
      [single.id, 'sent', sent.message.id],
      [range.id, 'sent', sent.message.id],
      [old.id, 'sent', sent.message.id],
    ]);
    const body = sent.message.body;
    expect(sent.message.author).toBe('human');
    expect(body).toContain('Review of your changes: 3 comments.');
    expect(body).toContain(`1. src/app.ts:12 (${single.id})\n> line 12 changed\n\nWhy "changed", and not "edited"?`);
    expect(body).toContain(`2. src/app.ts:20-22 (${range.id})\n> line 20\n> new A\n> new B\n\nName these two.`);
    expect(body).toContain(`3. notes/old.md:3 (before the change) (${old.id})\n> third\n\nKeep this line.`);
    expect(body).toContain('Overall: close.');
    expect(body).not.toContain('Not yet.');
    expect(body.indexOf('Keep this line.')).toBeLessThan(body.indexOf('Overall: close.'));

    // The run that took it had it as its one new message.
    const { requirement: after, run } = await settled(withApi(), requirementId, 2);
    expect(run).toMatchObject({ inputToSequence: sent.message.sequence, status: 'succeeded' });
    const conversation = (
      await ok(
        api().GET('/api/requirements/{id}/messages', {
          params: { path: { id: requirementId }, query: { limit: 200 } },
        }),
      )
    ).items;
    const taken = conversation.filter(
      (m) => m.deliverToRd && m.sequence >= run.inputFromSequence! && m.sequence <= run.inputToSequence!,
    );
    expect(taken.map((m) => m.id)).toEqual([sent.message.id]);
    // The import moved the threads: five lines added above the first, the second's lines edited,
    // the old side (the merge base) unchanged; the draft moved too.
    const moved = await until(
      'the threads to follow the import',
      async () => {
        const first = await byId(single.id);
        return first.anchor.commit === after.worktree!.workSha ? first : undefined;
      },
      30_000,
      100,
    );
    expect(moved).toMatchObject({
      anchor: { excerpt: 'line 12 changed' },
      endLine: 17,
      line: 17,
      outdated: false,
      state: 'sent',
    });
    expect(await byId(range.id)).toMatchObject({
      anchor: { commit: work, excerpt: 'line 20\nnew A\nnew B' },
      endLine: 22,
      line: 20,
      outdated: true,
      state: 'sent',
    });
    expect(await byId(old.id)).toMatchObject({
      anchor: { commit: requirement.worktree!.baseSha },
      line: 3,
      state: 'sent',
    });
    expect(await byId(later.id)).toMatchObject({ anchor: { excerpt: 'line 13' }, line: 18, state: 'draft' });
    // The file the run changed is no longer viewed; the other still is, until unmarked.
    const viewed = await ok(
      api().GET('/api/requirements/{id}/viewed-files', { params: { path: { id: requirementId } } }),
    );
    expect(viewed).toMatchObject({
      fileCount: 2,
      items: [
        { path: 'notes/old.md', viewed: true },
        { path: 'src/app.ts', viewed: false },
      ],
      viewedCount: 1,
    });
    expect(viewed.items[1].viewedAt).not.toBeNull();
    expect((await ok(markViewed('notes/old.md', false))).viewedCount).toBe(0);

    // A sent comment is not a draft to send again.
    await expectRefused(
      dataDirectory,
      () =>
        api().POST('/api/requirements/{id}/reviews', {
          body: { commentIds: [single.id] },
          params: { path: { id: requirementId } },
        }),
      409,
      'comment_not_draft',
    );
    await expectRefused(
      dataDirectory,
      () =>
        api().POST('/api/requirements/{id}/reviews', {
          body: { commentIds: [later.id, 'rvc_00000000-0000-4000-8000-000000000000'] },
          params: { path: { id: requirementId } },
        }),
      404,
      'review_comment_not_found',
    );
    expect((await runsOf(withApi(), requirementId)).length).toBe(2);
  });

  it('lets the agent list the threads sent to it and answer one, resolving it, with its own credential', async () => {
    const credentials = manager.app.get(RunCredentialsService);
    const requirement = await ok(api().GET('/api/requirements/{id}', { params: { path: { id: requirementId } } }));
    const runId = 'run_review_test';
    const token = credentials.issue({ requirementId, runId, sessionId: requirement.session.id });
    const env = {
      CODE_FACTORY_API_URL: `${manager.url}/api`,
      CODE_FACTORY_REQUIREMENT_ID: requirementId,
      CODE_FACTORY_SESSION_ID: requirement.session.id,
      CODE_FACTORY_TOKEN: token,
      PATH: process.env.PATH ?? '',
    };
    // A child process, awaited without blocking: the server answering it runs in this process.
    const cli = (...args: string[]) =>
      new Promise<{ code: number | null; json: unknown; stderr: string }>((resolve, reject) => {
        const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, json: stdout ? JSON.parse(stdout) : null, stderr }));
      });
    const listed = await cli('review', 'comments');
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    const items = (listed.json as { items: Comment[] }).items;
    // Drafts are the person's alone.
    expect(items.map((c) => [c.line, c.state, c.outdated])).toEqual([
      [17, 'sent', false],
      [20, 'sent', true],
      [3, 'sent', false],
    ]);
    const first = items.find((c) => c.line === 17)!;
    const answered = await cli('review', 'reply', '--id', first.id, '--body', 'Renamed to "edited".', '--resolve');
    expect(answered).toMatchObject({ code: 0, stderr: '' });
    expect(answered.json).toMatchObject({
      id: first.id,
      replies: [{ author: { id: runId, kind: 'agent', name: null }, body: 'Renamed to "edited".' }],
      state: 'resolved',
    });
    // The person reopens it; a reply without --resolve leaves it open.
    await ok(
      api().PATCH('/api/requirements/{id}/review-comments/{commentId}', {
        body: { state: 'open' },
        params: { path: { commentId: first.id, id: requirementId } },
      }),
    );
    expect((await cli('review', 'reply', '--id', first.id, '--body', 'Looking again.')).json).toMatchObject({
      replies: [{ body: 'Renamed to "edited".' }, { body: 'Looking again.' }],
      state: 'sent',
    });
    // A draft is not found by the agent; another Requirement's threads are out of its scope.
    // The agent changed the second thread's lines and resolves it: the next import leaves it resolved (and outdated).
    const changedLines = items.find((c) => c.outdated)!;
    expect(
      (await cli('review', 'reply', '--id', changedLines.id, '--body', 'Renamed both.', '--resolve')).json,
    ).toMatchObject({ outdated: true, state: 'resolved' });
    await ok(api().POST('/api/requirements/{id}/worktree/refresh', { params: { path: { id: requirementId } } }));
    expect(await byId(changedLines.id)).toMatchObject({ outdated: true, state: 'resolved' });
    // An agent's reply is short: 4 KB at most.
    expect((await cli('review', 'reply', '--id', first.id, '--body', 'x'.repeat(4097))).code).not.toBe(0);
    const draft = (await list('draft'))[0];
    const asRun = apiClient(manager.url, { auth: token });
    await expectRefused(
      dataDirectory,
      () =>
        asRun.POST('/api/agent/requirements/{id}/review-comments/{commentId}/replies', {
          body: { body: 'Sneaky.' },
          params: { path: { commentId: draft.id, id: requirementId } },
        }),
      404,
      'review_comment_not_found',
    );
    const other = await createRequirement(withApi(), { title: 'Someone else' });
    await expectRefused(
      dataDirectory,
      () => asRun.GET('/api/agent/requirements/{id}/review-comments', { params: { path: { id: other.id } } }),
      403,
      'outside_run_scope',
    );
    // The person's routes are not the run's.
    await refusal(
      asRun.GET('/api/requirements/{id}/review-comments', { params: { path: { id: requirementId } } }),
      403,
      'outside_run_scope',
    );
    const bad = await cli('review', 'reply', '--id', first.id);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--body is required');
  });
});
