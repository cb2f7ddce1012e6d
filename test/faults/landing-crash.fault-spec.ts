import * as fs from 'node:fs';
import * as path from 'node:path';

import { ok } from '../support/api';
import {
  createRequirement,
  git,
  initRepository,
  settled,
  sh,
  startRun,
  WORKTREE_AGENT,
  writeFiles,
} from '../support/git-repo';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from '../support/manager-process';
import { until } from '../support/wait';
import { checkInvariants } from './invariants';

// Issue 28: kill -9 during a land. A land records the commit it is about to put on the base
// before the base moves; the next start (or a retry) asks git whether the base holds it. Whatever
// the moment of the kill, nothing is half-landed (the base holds the work whole, or not at all,
// and the person's checkout is a clean checkout of it), and landing again lands it once.

jest.setTimeout(5 * 60_000);

const AGENTS = {
  CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
  CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
  GH_TOKEN: '',
  GITHUB_TOKEN: '',
};

describe('kill -9 during a land, then restart', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess | undefined;
  let repo: string;
  let base: string;
  const env: Record<string, string> = { ...AGENTS };

  beforeAll(() => {
    sandbox = makeSandbox();
    repo = sandbox.workspace;
    base = sandbox.shared;
    initRepository(repo, { 'README.md': '# repo\n' });
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  /** A Requirement whose run committed `file`. */
  async function worked(title: string, file: string): Promise<{ id: string; branch: string }> {
    const requirement = await createRequirement(manager!, { baseRef: 'main', title });
    await startRun(
      manager!,
      requirement.id,
      sh(`mkdir -p "$(dirname '${file}')" && echo '${title}' > '${file}' && git add -A && git commit -q -m '${title}'`),
    );
    const { requirement: done } = await settled(manager!, requirement.id, 1);
    return { branch: done.worktree!.branch!, id: requirement.id };
  }

  /** Commits on main whose message starts with `title`: a squash lands as exactly one. */
  const landings = (title: string) =>
    git(repo, 'log', '--format=%s', 'main')
      .split('\n')
      .filter((s) => s === title).length;

  /** After the restart: landed exactly once, or not at all and then once by the retry; the checkout clean. */
  async function expectLandedOnce(id: string, title: string, file: string): Promise<'settled' | 'retried'> {
    const after = await ok(manager!.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
    let how: 'settled' | 'retried';
    if (after.landing.landedAt !== null) {
      how = 'settled';
      expect(git(repo, 'merge-base', '--is-ancestor', after.landing.landedCommit!, 'main')).toBe('');
      const again = await manager!.api.POST('/api/requirements/{id}/land', {
        body: { method: 'squash' },
        params: { path: { id } },
      });
      expect(again.status).toBe(409);
      expect(again.error?.code).toBe('nothing_to_land');
    } else {
      how = 'retried';
      expect(landings(title)).toBe(0);
      await ok(
        manager!.api.POST('/api/requirements/{id}/land', { body: { method: 'squash' }, params: { path: { id } } }),
      );
    }
    expect(landings(title)).toBe(1);
    expect(git(repo, 'show', `main:${file}`).trim()).toBe(title);
    expect(git(repo, 'status', '--porcelain', '--untracked-files=no')).toBe('');
    expect(fs.existsSync(path.join(repo, '.git', 'index.lock'))).toBe(false);
    expect(await checkInvariants(manager!.dataDirectory())).toEqual([]);
    return how;
  }

  it("while git moves the person's checkout of main (a smudge filter hangs): settled on restart, never twice", async () => {
    const flag = path.join(base, 'hang-land');
    const mark = path.join(base, 'filter-pid');
    const filter = path.join(base, 'hang-filter.sh');
    fs.writeFileSync(
      filter,
      `#!/bin/sh\nif [ -f '${flag}' ]; then echo $$ > '${mark}'; exec sleep 600; fi\nexec cat\n`,
      { mode: 0o755 },
    );
    // The person's own filter (their configuration, which the manager keeps), for the files the land brings.
    writeFiles(repo, { '.gitattributes': 'landed/** filter=hang\n' });
    git(repo, 'add', '.gitattributes');
    git(repo, 'commit', '-q', '-m', 'attributes');
    Object.assign(env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'filter.hang.smudge', GIT_CONFIG_VALUE_0: filter });
    manager = await startManager({ env, sandbox });
    const title = 'Filtered land';
    const { id } = await worked(title, 'landed/file.txt');
    fs.writeFileSync(flag, '');
    const request = manager.api
      .POST('/api/requirements/{id}/land', { body: { method: 'squash' }, params: { path: { id } } })
      .catch(() => undefined);
    const pid = Number(
      await until('the filter to hang inside the land', async () =>
        fs.existsSync(mark) ? fs.readFileSync(mark, 'utf8').trim() || undefined : undefined,
      ),
    );
    await manager.kill9();
    await request;
    fs.rmSync(flag);
    process.kill(pid, 'SIGKILL');
    // The orphaned git finishes (or gives up) on its own; then the manager starts again.
    await until(
      'git to let go of the index',
      async () => !fs.existsSync(path.join(repo, '.git', 'index.lock')) || undefined,
    );
    manager = await startManager({ env, sandbox });
    await expectLandedOnce(id, title, 'landed/file.txt');
  });

  it('at any moment of a land (the checkout on another branch): the base holds it whole or not at all, and a retry lands it once', async () => {
    manager ??= await startManager({ env, sandbox });
    git(repo, 'checkout', '-q', '-b', 'elsewhere');
    const outcomes: string[] = [];
    for (const [i, delayMs] of [0, 15, 40, 90, 180].entries()) {
      const title = `Killed land ${i}`;
      const file = `killed/${i}.txt`;
      const { id } = await worked(title, file);
      const request = manager.api
        .POST('/api/requirements/{id}/land', { body: { method: 'squash' }, params: { path: { id } } })
        .catch(() => undefined);
      await new Promise((r) => setTimeout(r, delayMs));
      await manager.kill9();
      await request;
      manager = await startManager({ env, sandbox });
      outcomes.push(await expectLandedOnce(id, title, file));
    }
    // Some kills came before the base moved and some after (which ones depends on the machine's speed).
    expect(outcomes).toHaveLength(5);
    git(repo, 'checkout', '-q', 'main');
  });
});
