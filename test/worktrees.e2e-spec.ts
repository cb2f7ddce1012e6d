import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { ok } from './support/api';
import {
  checkoutSnapshot,
  createRequirement,
  git,
  initRepository,
  readReport,
  reply,
  runsOf,
  settled,
  sh,
  startRun,
  WORKTREE_AGENT,
  writeFiles,
} from './support/git-repo';
import { execute } from './support/db-snapshot';
import { sendUntyped } from './support/http';
import { startInProcess } from './support/in-process';
import { startManager, Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { expectRefused } from './support/refusals';
import { until } from './support/wait';

// Issue 14: a git worktree and branch per Requirement. A real manager on a real repository,
// its runs done by the synthetic worktree agent (what the real CLIs do with a tool call, see
// test/fixtures/agents/worktree-agent.js); the real CLIs are in worktrees-real-cli.e2e-spec.ts.

jest.setTimeout(120_000);

const AGENTS = {
  CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
  CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
  GH_TOKEN: '',
  GITHUB_TOKEN: '',
};

const patch = async (manager: TestManager, values: Record<string, unknown>) =>
  expect((await manager.api.PATCH('/api/configuration', { body: values })).status).toBe(200);

describe('a worktree per Requirement, in a git workspace', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let worktrees: string;
  const report = (name: string) => path.join(sandbox.shared, `${name}.json`);

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, {
      '.gitignore': 'node_modules/\n.env\nlocal/\n*.log\n',
      '.worktreeinclude': '# what a worktree needs\n.env\nlocal/conf.json\n',
      'README.md': '# repo\n',
      'gone.txt': 'to be deleted\n',
      'old-name.txt': 'renamed\n',
      'src/app.ts': 'export const a = 1;\n',
    });
    // The person's ignored files: some to copy, one to link, some to leave alone.
    writeFiles(sandbox.workspace, {
      '.env': 'SECRET=1\n',
      'debug.log': 'noise\n',
      'local/conf.json': '{"port":1}\n',
      'local/other.txt': 'mine\n',
      'node_modules/pkg/index.js': 'module.exports = 1;\n',
    });
    manager = await startInProcess({ env: AGENTS, sandbox });
    worktrees = (await ok(manager.api.GET('/api/workspace'))).worktreesDirectory;
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('gives each Requirement its own branch, worktree, included and linked files, setup and port block', async () => {
    await patch(manager, {
      worktreeLinks: ['node_modules'],
      worktreeSetupCommand: 'echo "setting up on $AGENT_MANAGER_BRANCH"; echo once >> .setup-count',
    });
    const before = checkoutSnapshot(sandbox.workspace);
    const [a, b] = [
      await createRequirement(manager, { title: 'Add the flush timings' }),
      await createRequirement(manager, { title: 'Fix the encoder' }),
    ];
    expect(a).toMatchObject({ baseRef: 'main', isolation: 'worktree', worktree: null });
    await Promise.all([
      startRun(manager, a.id, `report:${report('a')}`),
      startRun(manager, b.id, `report:${report('b')}`),
    ]);
    const [ra, rb] = [(await settled(manager, a.id, 1)).requirement, (await settled(manager, b.id, 1)).requirement];
    const [pa, pb] = [readReport(report('a')), readReport(report('b'))];
    for (const [requirement, place] of [
      [ra, pa],
      [rb, pb],
    ] as const) {
      expect(requirement.worktree).toMatchObject({
        ahead: 0,
        baseRef: 'main',
        behind: 0,
        dirty: true,
        mode: 'worktree',
        removedAt: null,
      });
      expect(requirement.worktree!.branch).toMatch(/^agent\/[a-z0-9-]+-[0-9a-f]{8}$/);
      expect(place.cwd).toBe(requirement.worktree!.path);
      expect(path.dirname(place.cwd)).toBe(worktrees);
      expect(place.env).toMatchObject({
        AGENT_MANAGER_BASE_REF: 'main',
        AGENT_MANAGER_BRANCH: requirement.worktree!.branch,
        AGENT_MANAGER_ROOT: fs.realpathSync(sandbox.workspace),
        AGENT_MANAGER_WORKTREE: place.cwd,
      });
      expect(git(place.cwd, 'symbolic-ref', '--short', 'HEAD').trim()).toBe(requirement.worktree!.branch);
      // Included: copied; linked: a symlink to the person's copy; the rest of the ignored files: not there.
      expect(fs.readFileSync(path.join(place.cwd, '.env'), 'utf8')).toBe('SECRET=1\n');
      expect(fs.lstatSync(path.join(place.cwd, '.env')).isSymbolicLink()).toBe(false);
      expect(fs.readFileSync(path.join(place.cwd, 'local/conf.json'), 'utf8')).toBe('{"port":1}\n');
      expect(fs.existsSync(path.join(place.cwd, 'local/other.txt'))).toBe(false);
      expect(fs.existsSync(path.join(place.cwd, 'debug.log'))).toBe(false);
      expect(fs.readlinkSync(path.join(place.cwd, 'node_modules'))).toBe(
        path.join(fs.realpathSync(sandbox.workspace), 'node_modules'),
      );
      expect(fs.readFileSync(path.join(place.cwd, '.setup-count'), 'utf8')).toBe('once\n');
    }
    expect(ra.worktree!.branch).not.toBe(rb.worktree!.branch);
    expect(pa.cwd).not.toBe(pb.cwd);
    // Port blocks of 10 that do not overlap.
    expect(Math.abs(Number(pa.env.AGENT_MANAGER_PORT) - Number(pb.env.AGENT_MANAGER_PORT))).toBeGreaterThanOrEqual(10);
    // The setup's output is in the run's trace; it runs once per worktree, not per run.
    const [runA] = await runsOf(manager, a.id);
    const trace = (await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: runA.id } } }))).items;
    expect(trace.find((t) => t.title.startsWith('Created worktree'))?.detail).toContain('linked: node_modules');
    expect(trace.find((t) => t.title.startsWith('Worktree setup'))?.detail).toContain(
      `setting up on ${ra.worktree!.branch}`,
    );
    await reply(manager, a.id, `report:${report('a2')}`);
    await settled(manager, a.id, 2);
    expect(readReport(report('a2')).cwd).toBe(pa.cwd);
    expect(fs.readFileSync(path.join(pa.cwd, '.setup-count'), 'utf8')).toBe('once\n');
    expect(checkoutSnapshot(sandbox.workspace)).toEqual(before);
    // The link is not the agent's work: only the setup's file is.
    expect(
      (await ok(manager.api.GET('/api/requirements/{id}/changes', { params: { path: { id: b.id } } }))).files.map(
        (f: { path: string }) => f.path,
      ),
    ).toEqual(['.setup-count']);
    const workspace = await ok(manager.api.GET('/api/workspace'));
    expect(workspace.worktreeCount).toBeGreaterThanOrEqual(2);
    expect(workspace.worktreesDiskBytes).toBeGreaterThan(0);
    await patch(manager, { worktreeLinks: [], worktreeSetupCommand: null });
  });

  it('fails the run with nothing consumed when the setup command fails, and runs it again on the next start', async () => {
    await patch(manager, { worktreeSetupCommand: 'echo "cannot install" >&2; exit 3' });
    const requirement = await createRequirement(manager, { title: 'Setup fails' });
    await startRun(manager, requirement.id, `report:${report('setup-fail')}`);
    const failed = await settled(manager, requirement.id, 1);
    expect(failed.run.status).toBe('failed');
    expect(failed.run.error).toContain('setup command');
    expect(failed.run.error).toContain('exited with 3');
    expect(failed.requirement.session).toMatchObject({
      lastConsumedMessageSequence: 0,
      pendingMessageCount: 1,
      state: 'failed',
    });
    expect(fs.existsSync(report('setup-fail'))).toBe(false);
    const trace = (await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: failed.run.id } } })))
      .items;
    expect(trace.find((t) => t.title.startsWith('Worktree setup'))?.detail).toContain('cannot install');
    await patch(manager, { worktreeSetupCommand: null });
    await startRun(manager, requirement.id, '');
    const retried = await settled(manager, requirement.id, 2);
    expect(retried.run.status).toBe('succeeded');
    expect(readReport(report('setup-fail')).cwd).toBe(retried.requirement.worktree!.path);
    // Everything up to the retry's start is consumed now, the first message included.
    expect(retried.requirement.session).toMatchObject({
      lastError: null,
      pendingMessageCount: 0,
      state: 'waiting_human',
    });
    expect(retried.requirement.session.lastConsumedMessageSequence).toBeGreaterThanOrEqual(1);
  });

  it('gives the secrets to a setup file that is the person’s own, and withholds them from one that is not (issue 45)', async () => {
    const secretFile = path.join(sandbox.shared, 'wt-secret');
    fs.writeFileSync(secretFile, 'wt-5ecret-value', { mode: 0o600 });
    await patch(manager, { secrets: [{ file: secretFile, name: 'WT_SECRET' }], worktreeSetupCommand: null });
    fs.mkdirSync(path.join(sandbox.workspace, '.agent-manager'), { recursive: true });
    fs.writeFileSync(
      path.join(sandbox.workspace, '.agent-manager', 'setup'),
      'echo "[setup sees ${#WT_SECRET} characters]"\n',
    );
    git(sandbox.workspace, 'add', '.agent-manager/setup');
    git(sandbox.workspace, 'commit', '-q', '-m', 'a setup of the repository');
    const setupOf = async (title: string) => {
      const requirement = await createRequirement(manager, { title });
      await startRun(manager, requirement.id, '');
      const done = await settled(manager, requirement.id, 1);
      expect(done.run.status).toBe('succeeded');
      const trace = (await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: done.run.id } } })))
        .items;
      return { id: requirement.id, setup: trace.find((t) => t.title.startsWith('Worktree setup'))?.detail ?? '' };
    };
    const teardownLog = path.join(sandbox.shared, 'secret-teardown.log');
    try {
      // The worktree's file is the checkout's own: the person wrote it.
      const own = await setupOf('Own setup');
      expect(own.setup).toContain('[setup sees 15 characters]');
      expect(own.setup).not.toContain('secrets withheld');
      // A teardown, even the person's own command, runs in a worktree an agent has had: no secret.
      await patch(manager, {
        worktreeTeardownCommand: `echo "[teardown sees \${#WT_SECRET} characters]" >> ${teardownLog}`,
      });
      expect(
        (await manager.api.POST('/api/requirements/{id}/cancel', { params: { path: { id: own.id } } })).status,
      ).toBe(200);
      expect(fs.readFileSync(teardownLog, 'utf8')).toBe('[teardown sees 0 characters]\n');
      // The worktree's file differs from the checkout's (as one an agent edited would): no secret.
      fs.appendFileSync(path.join(sandbox.workspace, '.agent-manager', 'setup'), '# changed here\n');
      const other = await setupOf('Other setup');
      expect(other.setup).toContain('[setup sees 0 characters]');
      expect(other.setup).toContain("secrets withheld: .agent-manager/setup is not your checkout's own");
    } finally {
      git(sandbox.workspace, 'checkout', '--', '.agent-manager/setup');
      git(sandbox.workspace, 'rm', '-q', '.agent-manager/setup');
      git(sandbox.workspace, 'commit', '-q', '-m', 'no setup');
      await patch(manager, { secrets: [], worktreeTeardownCommand: null });
    }
  });

  it('lists committed, uncommitted and untracked changes and serves each diff, refusing paths outside the worktree', async () => {
    const requirement = await createRequirement(manager, { title: 'Change files' });
    const work = [
      'git rm -q gone.txt',
      'git mv old-name.txt new-name.txt',
      "printf 'export const a = 2;\\nexport const b = 3;\\n' > src/app.ts",
      "printf '\\000\\001\\002binary' > blob.bin",
      'git add -A && git commit -q -m "agent work"',
      "printf '# repo\\nmore\\n' > README.md",
      "printf 'one\\ntwo\\nthree\\n' > notes.txt",
      'ln -s /etc escape',
    ].join(' && ');
    await startRun(manager, requirement.id, sh(work));
    const { requirement: done } = await settled(manager, requirement.id, 1);
    expect(done.worktree).toMatchObject({ ahead: 1, behind: 0, dirty: true });
    const changes = await manager.api.GET('/api/requirements/{id}/changes', {
      params: { path: { id: requirement.id } },
    });
    expect(changes.status).toBe(200);
    expect(changes.data).toMatchObject({
      baseRef: 'main',
      headSha: done.worktree!.headSha,
      mergeBaseSha: done.worktree!.baseSha,
      truncated: false,
    });
    const byPath = Object.fromEntries((changes.data!.files as Array<{ path: string }>).map((f) => [f.path, f]));
    expect(byPath['gone.txt']).toEqual({
      additions: 0,
      binary: false,
      deletions: 1,
      oldPath: null,
      path: 'gone.txt',
      status: 'deleted',
    });
    expect(byPath['new-name.txt']).toEqual({
      additions: 0,
      binary: false,
      deletions: 0,
      oldPath: 'old-name.txt',
      path: 'new-name.txt',
      status: 'renamed',
    });
    expect(byPath['src/app.ts']).toEqual({
      additions: 2,
      binary: false,
      deletions: 1,
      oldPath: null,
      path: 'src/app.ts',
      status: 'modified',
    });
    expect(byPath['blob.bin']).toEqual({
      additions: 0,
      binary: true,
      deletions: 0,
      oldPath: null,
      path: 'blob.bin',
      status: 'added',
    });
    expect(byPath['README.md']).toEqual({
      additions: 1,
      binary: false,
      deletions: 0,
      oldPath: null,
      path: 'README.md',
      status: 'modified',
    });
    expect(byPath['notes.txt']).toEqual({
      additions: 3,
      binary: false,
      deletions: 0,
      oldPath: null,
      path: 'notes.txt',
      status: 'added',
    });
    expect(Object.keys(byPath).sort()).toEqual([
      'README.md',
      'blob.bin',
      'escape',
      'gone.txt',
      'new-name.txt',
      'notes.txt',
      'src/app.ts',
    ]);

    const diff = (file: string, oldPath?: string) =>
      manager.api.GET('/api/requirements/{id}/changes/diff', {
        params: { path: { id: requirement.id }, query: { oldPath, path: file } },
        parseAs: 'text',
      });
    const modified = await diff('src/app.ts');
    expect(modified.status).toBe(200);
    expect(modified.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(modified.data).toContain('-export const a = 1;\n+export const a = 2;\n+export const b = 3;');
    expect((await diff('notes.txt')).data).toContain('+one\n+two\n+three');
    expect((await diff('new-name.txt', 'old-name.txt')).data).toContain('rename from old-name.txt');
    expect((await diff('blob.bin')).data).toContain('Binary files');
    for (const bad of ['../outside.txt', '/etc/passwd', 'src/../../x', '.git/config']) {
      await expectRefused(manager.dataDirectory(), () => diff(bad), 400, 'path_outside_worktree');
    }
    // Diffs are read from the commits imported into the person's repository, never from the
    // agent's files: a path through the agent's symlink names nothing there (issue 44).
    const through = await diff('escape/passwd');
    expect(through.status).toBe(200);
    expect(through.data ?? '').toBe('');
    expect((await diff('escape')).data).toContain('+/etc');
    await expectRefused(manager.dataDirectory(), () => diff(''), 400);
    await expectRefused(
      manager.dataDirectory(),
      () =>
        manager.api.GET('/api/requirements/{id}/changes', {
          params: { path: { id: 'req_00000000-0000-4000-8000-000000000000' } },
        }),
      404,
      'requirement_not_found',
    );
    const inPlace = await createRequirement(manager, { isolation: 'in_place', title: 'In place' });
    await expectRefused(
      manager.dataDirectory(),
      () => manager.api.GET('/api/requirements/{id}/changes', { params: { path: { id: inPlace.id } } }),
      409,
      'no_worktree',
    );
  });

  it('diffs files whose names start with two dots (`..foo`, `a/..b`) or hold pathspec magic (a literal path); a real `..` segment and an absolute path stay refused', async () => {
    const requirement = await createRequirement(manager, { title: 'Dotted names' });
    await startRun(
      manager,
      requirement.id,
      sh(
        "printf 'dots\\n' > ..foo && mkdir -p a ..dir && printf 'b\\n' > a/..b && printf 'c\\n' > ..dir/c.txt && ln -s /etc out && printf 'star\\n' > 'st*r.md' && printf 'other\\n' > stXr.md",
      ),
    );
    await settled(manager, requirement.id, 1);
    const changes = await manager.api.GET('/api/requirements/{id}/changes', {
      params: { path: { id: requirement.id } },
    });
    expect((changes.data!.files as Array<{ path: string }>).map((f) => f.path).sort()).toEqual([
      '..dir/c.txt',
      '..foo',
      'a/..b',
      'out',
      'st*r.md',
      'stXr.md',
    ]);
    const diff = (file: string) =>
      manager.api.GET('/api/requirements/{id}/changes/diff', {
        params: { path: { id: requirement.id }, query: { path: file } },
        parseAs: 'text',
      });
    for (const [file, line] of [
      ['..foo', '+dots'],
      ['a/..b', '+b'],
      ['..dir/c.txt', '+c'],
    ]) {
      const answer = await diff(file);
      expect({ file, status: answer.status }).toEqual({ file, status: 200 });
      expect(answer.data).toContain(`+++ b/${file}`);
      expect(answer.data).toContain(`${line}\n`);
    }
    for (const bad of ['../x', '../..foo', 'a/../../x', '/etc/passwd', '..dir/../../x']) {
      await expectRefused(manager.dataDirectory(), () => diff(bad), 400, 'path_outside_worktree');
    }
    // A name is a name (`:(literal)`): `st*r.md` is that file, not a pattern that takes `stXr.md` too.
    const starred = (await diff('st*r.md')).data ?? '';
    expect(starred).toContain('+star');
    expect(starred).not.toContain('stXr.md');
    // Through the agent's symlink there is nothing: the diff is read from commits, never from its files.
    expect((await diff('out/passwd')).data ?? '').toBe('');
  });

  it('starts from the base ref asked for, and refuses one git does not know', async () => {
    git(sandbox.workspace, 'branch', 'develop');
    const side = path.join(path.dirname(sandbox.home), 'side');
    git(sandbox.workspace, 'worktree', 'add', '-q', side, 'develop');
    writeFiles(side, { 'develop.txt': 'only on develop\n' });
    git(side, 'add', '-A');
    git(side, 'commit', '-q', '-m', 'develop work');
    git(sandbox.workspace, 'worktree', 'remove', side);
    const requirement = await createRequirement(manager, { baseRef: 'develop', title: 'From develop' });
    expect(requirement).toMatchObject({ baseRef: 'develop', isolation: 'worktree' });
    await startRun(manager, requirement.id, `report:${report('develop')}`);
    const { requirement: done } = await settled(manager, requirement.id, 1);
    const place = readReport(report('develop'));
    expect(place.env.AGENT_MANAGER_BASE_REF).toBe('develop');
    expect(fs.readFileSync(path.join(place.cwd, 'develop.txt'), 'utf8')).toBe('only on develop\n');
    expect(done.worktree!.baseSha).toBe(git(sandbox.workspace, 'rev-parse', 'develop').trim());
    const data = manager.dataDirectory();
    await expectRefused(
      data,
      () =>
        manager.api.POST('/api/requirements', { body: { baseRef: 'no-such-branch', provider: 'codex', title: 'x' } }),
      400,
      'unknown_base_ref',
    );
    await expectRefused(
      data,
      () =>
        manager.api.POST('/api/requirements', {
          body: { baseRef: '--upload-pack=touch /tmp/x', provider: 'codex', title: 'x' },
        }),
      400,
    );
    // An isolation the API does not know: untyped on purpose.
    await expectRefused(
      data,
      () =>
        sendUntyped(manager.origin, 'POST', '/api/requirements', {
          isolation: 'container',
          provider: 'codex',
          title: 'x',
        }),
      400,
    );
    await expectRefused(
      data,
      () =>
        manager.api.POST('/api/requirements', {
          body: { baseRef: 'main', isolation: 'in_place', provider: 'codex', title: 'x' },
        }),
      400,
      'base_ref_in_place',
    );
  });

  it('runs in place when asked, per Requirement or by configuration, and in a monorepo folder when configured', async () => {
    const asked = await createRequirement(manager, { isolation: 'in_place', title: 'In the checkout' });
    expect(asked).toMatchObject({ baseRef: null, isolation: 'in_place' });
    await startRun(manager, asked.id, `report:${report('in-place')}`);
    const { requirement } = await settled(manager, asked.id, 1);
    expect(readReport(report('in-place')).cwd).toBe(fs.realpathSync(sandbox.workspace));
    expect(requirement.worktree).toMatchObject({
      branch: null,
      mode: 'in_place',
      path: fs.realpathSync(sandbox.workspace),
    });
    // A monorepo: the agent works in one folder of its worktree.
    await patch(manager, { worktreeSubdirectory: 'src' });
    const inFolder = await createRequirement(manager, { title: 'In a package' });
    await startRun(manager, inFolder.id, `report:${report('subdirectory')}`);
    const { requirement: folder } = await settled(manager, inFolder.id, 1);
    expect(readReport(report('subdirectory')).cwd).toBe(path.join(folder.worktree!.path!, 'src'));
    await patch(manager, { worktreeSubdirectory: null });
    await patch(manager, { isolation: 'in_place' });
    expect((await createRequirement(manager, { title: 'Configured in place' })).isolation).toBe('in_place');
    await patch(manager, { isolation: 'worktree' });
  });

  it('reviews in a temporary detached worktree at the PR head, removed afterwards', async () => {
    const requirement = await createRequirement(manager, { title: 'Open a PR' });
    const register =
      'echo pr > pr.txt && git add pr.txt && git commit -q -m pr && ' +
      'code-factory-cli pr register --url https://github.com/org/repo/pull/5 --title "PR 5" --base-branch main --head-branch "$AGENT_MANAGER_BRANCH" --head-sha "$(git rev-parse HEAD)" --status open';
    await startRun(manager, requirement.id, sh(register));
    const { requirement: done } = await settled(manager, requirement.id, 1);
    const [pullRequest] = (
      await ok(manager.api.GET('/api/pull-requests', { params: { query: { requirementId: requirement.id } } }))
    ).items;
    expect(pullRequest.headSha).toBe(done.worktree!.headSha);
    const before = checkoutSnapshot(sandbox.workspace);
    const requested = await manager.api.POST('/api/pull-requests/{id}/review-requests', {
      params: { path: { id: pullRequest.id } },
      body: {
        prompt: `${sh('git rev-parse HEAD > "$OUT.head"; git symbolic-ref -q HEAD > "$OUT.ref" || echo detached > "$OUT.ref"'.replace(/\$OUT/g, report('review')))} report:${report('review')}`,
        provider: 'codex',
      },
    });
    expect(requested.status).toBe(202);
    await until(
      'the review to finish',
      async () =>
        (await ok(manager.api.GET('/api/review-requests', { params: { query: { pullRequestId: pullRequest.id } } })))
          .items[0].status !== 'running' || undefined,
    );
    const place = readReport(report('review'));
    expect(path.dirname(place.cwd)).toBe(worktrees);
    expect(place.cwd).not.toBe(done.worktree!.path);
    expect(fs.readFileSync(`${report('review')}.head`, 'utf8').trim()).toBe(pullRequest.headSha);
    expect(fs.readFileSync(`${report('review')}.ref`, 'utf8').trim()).toBe('detached');
    expect(fs.existsSync(place.cwd)).toBe(false);
    expect(git(sandbox.workspace, 'worktree', 'list')).not.toContain(place.cwd);
    expect(checkoutSnapshot(sandbox.workspace)).toEqual(before);
    expect(git(done.worktree!.path!, 'rev-parse', 'HEAD').trim()).toBe(done.worktree!.headSha);
  });

  it('cancels a started Requirement without losing its work: a patch of it, then the worktree removed', async () => {
    const cancelled = await createRequirement(manager, { title: 'Abandoned idea' });
    await startRun(manager, cancelled.id, sh('echo draft > draft.txt && echo more >> README.md'));
    const ran = (await settled(manager, cancelled.id, 1)).requirement;
    expect(fs.existsSync(ran.worktree!.path!)).toBe(true);
    const answer = await manager.api.POST('/api/requirements/{id}/cancel', { params: { path: { id: cancelled.id } } });
    expect(answer.status).toBe(200);
    expect(answer.data!.status).toBe('cancelled');
    // The cancel answers once its hooks ran: the worktree is gone and its work is in a patch.
    expect(fs.existsSync(ran.worktree!.path!)).toBe(false);
    const patches = path.join(manager.dataDirectory(), 'worktree-patches', cancelled.id);
    const saved = fs
      .readdirSync(patches)
      .map((f) => fs.readFileSync(path.join(patches, f), 'utf8'))
      .join('\n');
    expect(saved).toContain('+draft');
    expect(saved).toContain('+more');
    expect(git(sandbox.workspace, 'worktree', 'list')).not.toContain(ran.worktree!.path);
  });

  it('removes idle done worktrees (saving their work), keeps only branches with commits of their own, recreates on reopen, and purges', async () => {
    const kept = await createRequirement(manager, { title: 'Has commits' });
    const empty = await createRequirement(manager, { title: 'No commits' });
    await startRun(
      manager,
      kept.id,
      sh('echo kept > kept.txt && git add kept.txt && git commit -q -m kept && echo unsaved > unsaved.txt'),
    );
    await startRun(manager, empty.id, 'nothing to do');
    const keptDone = (await settled(manager, kept.id, 1)).requirement;
    const emptyDone = (await settled(manager, empty.id, 1)).requirement;
    for (const id of [kept.id, empty.id]) {
      expect((await manager.api.POST('/api/requirements/{id}/confirm', { params: { path: { id } } })).status).toBe(200);
    }
    // The teardown runs before each removal; its failure does not stop the removal.
    const teardownLog = report('teardown');
    await patch(manager, {
      worktreeIdleDays: 0,
      worktreeTeardownCommand: `echo "$AGENT_MANAGER_BRANCH" >> ${teardownLog}; exit 1`,
    });
    const removed = async (id: string) =>
      until(`the idle worktree of ${id} to go`, async () => {
        const r = await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
        return r.worktree?.removedAt ? r : undefined;
      });
    const [keptRemoved, emptyRemoved] = [await removed(kept.id), await removed(empty.id)];
    await patch(manager, { worktreeIdleDays: 7, worktreeTeardownCommand: null });
    expect(fs.readFileSync(teardownLog, 'utf8').trim().split('\n').sort()).toEqual(
      [keptDone.worktree!.branch, emptyDone.worktree!.branch].sort(),
    );
    expect(fs.existsSync(keptDone.worktree!.path!)).toBe(false);
    expect(fs.existsSync(emptyDone.worktree!.path!)).toBe(false);
    expect(keptRemoved.worktree).toMatchObject({ branch: keptDone.worktree!.branch, path: null });
    expect(emptyRemoved.worktree!.branch).toBeNull();
    const branches = git(sandbox.workspace, 'branch', '--list', 'agent/*');
    expect(branches).toContain(keptDone.worktree!.branch);
    expect(branches).not.toContain(emptyDone.worktree!.branch);
    // The uncommitted work is in a patch beside the Requirement's records.
    const patches = path.join(manager.dataDirectory(), 'worktree-patches', kept.id);
    const [patchFile] = fs.readdirSync(patches);
    expect(fs.readFileSync(path.join(patches, patchFile), 'utf8')).toContain('+unsaved');

    // Reopened: the worktree comes back from its branch, its commit there.
    await reply(manager, kept.id, `report:${report('reopened')}`);
    const reopened = (await settled(manager, kept.id, 2)).requirement;
    expect(reopened.worktree).toMatchObject({ ahead: 1, branch: keptDone.worktree!.branch, removedAt: null });
    expect(fs.readFileSync(path.join(readReport(report('reopened')).cwd, 'kept.txt'), 'utf8')).toBe('kept\n');

    // Purged by retention: the worktree goes with the records.
    expect(
      (await manager.api.POST('/api/requirements/{id}/confirm', { params: { path: { id: kept.id } } })).status,
    ).toBe(200);
    await patch(manager, { doneRequirementRetentionDays: 0 });
    await until(
      'the purge',
      async () =>
        (await manager.api.GET('/api/requirements/{id}', { params: { path: { id: kept.id } } })).status === 404 ||
        undefined,
    );
    await until(
      'the purged worktree and its patches to go',
      async () => (!fs.existsSync(reopened.worktree!.path!) && !fs.existsSync(patches)) || undefined,
    );
    expect(git(sandbox.workspace, 'worktree', 'list')).not.toContain(reopened.worktree!.path);
  });
});

describe('isolation outside a plain git repository', () => {
  it('runs in place in a workspace that is not a git repository, and refuses a worktree there', async () => {
    const sandbox = makeSandbox();
    const manager = await startInProcess({ env: AGENTS, sandbox });
    try {
      const requirement = await createRequirement(manager, { title: 'No git' });
      expect(requirement).toMatchObject({ baseRef: null, isolation: 'in_place', worktree: null });
      const file = path.join(sandbox.shared, 'nogit.json');
      await startRun(manager, requirement.id, `report:${file}`);
      const { requirement: done } = await settled(manager, requirement.id, 1);
      const place = readReport(file);
      expect(place.cwd).toBe(fs.realpathSync(sandbox.workspace));
      expect(place.env).toMatchObject({
        AGENT_MANAGER_BASE_REF: '',
        AGENT_MANAGER_BRANCH: '',
        AGENT_MANAGER_WORKTREE: place.cwd,
      });
      expect(Number(place.env.AGENT_MANAGER_PORT)).toBeGreaterThan(1024);
      expect(done.worktree).toMatchObject({ mode: 'in_place' });
      await expectRefused(
        manager.dataDirectory(),
        () => manager.api.POST('/api/requirements', { body: { isolation: 'worktree', provider: 'codex', title: 'x' } }),
        400,
        'worktree_unavailable',
      );
      await expectRefused(
        manager.dataDirectory(),
        () => manager.api.POST('/api/requirements', { body: { baseRef: 'main', provider: 'codex', title: 'x' } }),
        400,
        'worktree_unavailable',
      );
    } finally {
      await manager.stop();
      sandbox.cleanup();
    }
  });

  it('initialises submodules and checks out LFS pointers when git-lfs is not installed', async () => {
    const sandbox = makeSandbox();
    const base = path.dirname(sandbox.home);
    // A local submodule needs the file protocol, which git refuses by default since 2.38.4.
    const fileProtocol = {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'protocol.file.allow',
      GIT_CONFIG_VALUE_0: 'always',
    };
    const library = path.join(base, 'library');
    initRepository(library, { 'lib.txt': 'library code\n' });
    initRepository(sandbox.workspace, { 'README.md': '# with a submodule and LFS\n' });
    const withFiles = (...args: string[]) =>
      execFileSync('git', args, { cwd: sandbox.workspace, env: { ...process.env, ...fileProtocol }, stdio: 'ignore' });
    withFiles('submodule', 'add', '-q', library, 'vendor/library');
    // An LFS-tracked file, as a repository made with git-lfs has it: a pointer in git, the filter in the config.
    writeFiles(sandbox.workspace, { '.gitattributes': '*.bin filter=lfs diff=lfs merge=lfs -text\n' });
    const pointer =
      'version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12\n';
    fs.writeFileSync(path.join(base, 'pointer'), pointer);
    const blob = git(sandbox.workspace, 'hash-object', '-w', path.join(base, 'pointer')).trim();
    git(sandbox.workspace, 'update-index', '--add', '--cacheinfo', `100644,${blob},model.bin`);
    git(sandbox.workspace, 'add', '.gitattributes', '.gitmodules');
    git(sandbox.workspace, 'commit', '-q', '-m', 'submodule and lfs');
    for (const [key, value] of [
      ['filter.lfs.smudge', 'git-lfs smudge -- %f'],
      ['filter.lfs.process', 'git-lfs filter-process'],
      ['filter.lfs.clean', 'git-lfs clean -- %f'],
      ['filter.lfs.required', 'true'],
    ] as const) {
      git(sandbox.workspace, 'config', key, value);
    }
    // git-lfs is not installed on this machine: a plain `git worktree add` cannot check this out.
    expect(() => git(sandbox.workspace, 'worktree', 'add', '-q', path.join(base, 'plain'), 'HEAD')).toThrow();
    git(sandbox.workspace, 'worktree', 'prune');
    const manager = await startManager({ env: { ...AGENTS, ...fileProtocol }, sandbox });
    try {
      const requirement = await createRequirement(manager, { title: 'Submodule and LFS' });
      const file = path.join(sandbox.shared, 'sub.json');
      const status = path.join(sandbox.shared, 'status.out');
      await startRun(
        manager,
        requirement.id,
        `${sh(`git status --porcelain > ${status} 2>&1; echo "exit $?" >> ${status}`)} report:${file}`,
      );
      const { requirement: done, run } = await settled(manager, requirement.id, 1);
      expect(run.status).toBe('succeeded');
      const place = readReport(file);
      expect(fs.readFileSync(path.join(place.cwd, 'vendor/library/lib.txt'), 'utf8')).toBe('library code\n');
      expect(fs.readFileSync(path.join(place.cwd, 'model.bin'), 'utf8')).toBe(pointer);
      // The agent's own git works there too (status would fail on the missing filter otherwise).
      expect(fs.readFileSync(status, 'utf8')).toBe('exit 0\n');
      expect(done.worktree).toMatchObject({ mode: 'worktree' });
      const trace = (await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: run.id } } }))).items;
      expect(trace.find((t) => t.title.startsWith('Created worktree'))?.detail).toContain('git-lfs is not installed');
    } finally {
      await manager.stop();
      sandbox.cleanup();
    }
  });
});

describe('a linked worktree made before each agent had a repository of its own (issue 44 §7)', () => {
  it('keeps working, doctor names its layout, and its next run makes it an own repository with every file, staged change and commit kept', async () => {
    const sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n', 'src/a.txt': 'a\n' });
    let manager = await startManager({ env: AGENTS, sandbox });
    try {
      const requirement = await createRequirement(manager, { title: 'From before' });
      await startRun(manager, requirement.id, sh('echo one > one.txt && git add one.txt && git commit -q -m one'));
      const { requirement: first } = await settled(manager, requirement.id, 1);
      const { branch, path: tree } = first.worktree as { branch: string; path: string };
      await manager.stop();
      // What an older version left: a `git worktree` of the person's repository on the branch, with
      // work in progress (staged, unstaged, untracked), and the row saying so.
      fs.rmSync(tree, { force: true, recursive: true });
      git(sandbox.workspace, 'worktree', 'prune');
      git(sandbox.workspace, 'worktree', 'add', '-q', tree, branch);
      writeFiles(tree, { 'src/a.txt': 'changed\n', 'staged.txt': 'staged\n', 'untracked.txt': 'untracked\n' });
      git(tree, 'add', 'staged.txt');
      const status = git(tree, 'status', '--porcelain');
      await execute(
        path.join(manager.dataDirectory(), 'factory.sqlite'),
        `UPDATE requirement_worktree SET layout = 'linked_worktree' WHERE requirement_id = ?`,
        [requirement.id],
      );
      manager = await startManager({ env: AGENTS, sandbox });
      const doctor = await ok(manager.api.GET('/api/doctor', { params: { query: { refresh: 'true' } } }));
      const layouts = doctor.checks.find((c) => c.id === 'worktrees')!;
      expect(layouts).toMatchObject({ code: 'worktrees.linked', status: 'warn' });
      expect(layouts.detail).toContain(`${path.basename(tree)}: linked worktree`);
      // It keeps working: its changes are read as they are.
      const before = await ok(
        manager.api.GET('/api/requirements/{id}/changes', { params: { path: { id: requirement.id } } }),
      );
      expect(before.files.map((f) => f.path).sort()).toEqual(['one.txt', 'src/a.txt', 'staged.txt', 'untracked.txt']);
      // Its next run turns it into an own repository, in place.
      await reply(manager, requirement.id, sh('echo two > two.txt && git add two.txt && git commit -q -m two'));
      const { requirement: after, run } = await settled(manager, requirement.id, 2);
      expect(run.status).toBe('succeeded');
      expect(after.worktree).toMatchObject({ layout: 'own_repository', path: tree });
      expect(fs.statSync(path.join(tree, '.git')).isDirectory()).toBe(true);
      expect(git(sandbox.workspace, 'worktree', 'list', '--porcelain')).not.toContain(tree);
      // Everything kept: the staged change was committed by the run's `git commit` (as before), the rest is there.
      expect(git(tree, 'log', '--format=%s', '-3').trim().split('\n')).toEqual(['two', 'one', 'initial']);
      expect(git(tree, 'show', '--name-only', '--format=', 'HEAD').trim().split('\n').sort()).toEqual([
        'staged.txt',
        'two.txt',
      ]);
      expect(git(tree, 'status', '--porcelain')).toBe(status.replace(/^A  staged.txt\n/m, ''));
      expect(git(sandbox.workspace, 'rev-parse', branch).trim()).toBe(after.worktree!.headSha);
      const trace = (await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: run.id } } }))).items;
      expect(trace.some((t) => t.title.includes('is now a repository of the agent'))).toBe(true);
      const fixed = (await ok(manager.api.GET('/api/doctor', { params: { query: { refresh: 'true' } } }))).checks.find(
        (c) => c.id === 'worktrees',
      )!;
      expect(fixed).toMatchObject({ code: 'worktrees.ok', status: 'ok' });
    } finally {
      await manager.stop();
      sandbox.cleanup();
    }
  });
});
