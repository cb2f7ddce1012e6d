import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';

import { ok } from './support/api';
import {
  WORKTREE_AGENT,
  checkoutSnapshot,
  createRequirement,
  git,
  initRepository,
  settled,
  sh,
  startRun,
} from './support/git-repo';
import { startInProcess } from './support/in-process';
import { Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { until } from './support/wait';

// Issue 28: the conflict radar after a land computes again only the work whose files the land
// touched, and carries the other answers over the base's move. What it carries must be what a
// cold pass (a restarted manager, nothing in memory) computes from scratch. And a land refuses a
// conflict before a dirty checkout of the base, leaving that checkout as it was.

jest.setTimeout(120_000);

type Radar = Schemas['ConflictRadarResponseDto'];

const AGENTS = {
  CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
  CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
  GH_TOKEN: '',
  GITHUB_TOKEN: '',
};
const FIVE_LINES = 'one\ntwo\nthree\nfour\nfive\n';

/** What the radar says, without when it said it. */
function comparable(radar: Radar): unknown {
  return {
    pairs: radar.pairs
      .map((p) => ({ ids: [p.a, p.b].sort(), paths: p.paths }))
      .sort((x, y) => x.ids.join().localeCompare(y.ids.join())),
    requirements: radar.requirements
      .map(({ checkedAt: _checkedAt, title: _title, ...row }) => ({
        ...row,
        conflictsWith: row.conflictsWith.map((c) => ({ paths: c.paths, requirementId: c.requirementId })),
      }))
      .sort((x, y) => x.requirementId.localeCompare(y.requirementId)),
  };
}

describe('the conflict radar across lands', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  const ids: Record<'p' | 'q' | 'r' | 's' | 't', string> = { p: '', q: '', r: '', s: '', t: '' };

  beforeAll(() => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'a.txt': FIVE_LINES, 'b.txt': FIVE_LINES, 'c/d.txt': FIVE_LINES });
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('recomputes the work a land touched, carries the rest, and agrees with a cold pass', async () => {
    manager = await startInProcess({ env: AGENTS, sandbox });
    const create = async (title: string, command: string) => {
      const requirement = await createRequirement(manager, { title });
      await startRun(manager, requirement.id, sh(`${command} && git commit -q -am '${title}'`));
      return requirement.id;
    };
    // p and q rewrite the first line of a.txt (they conflict); s rewrites its last line (it shares
    // the file, cleanly); r changes b.txt, and t changes c/d.txt: nobody else's files.
    const p = await create('P', `sed -i '1s/.*/by p/' a.txt`);
    const q = await create('Q', `sed -i '1s/.*/by q/' a.txt`);
    const r = await create('R', `sed -i '1s/.*/by r/' b.txt`);
    const s = await create('S', `sed -i '5s/.*/by s/' a.txt`);
    const t = await create('T', `sed -i '1s/.*/by t/' c/d.txt`);
    Object.assign(ids, { p, q, r, s, t });
    for (const id of [p, q, r, s, t]) {
      expect((await settled(manager, id, 1)).run.status).toBe('succeeded');
    }
    const radar = () => ok(manager.api.GET('/api/conflicts'));
    // Nothing in memory: a restarted manager computes every answer afresh, and must find the same.
    const coldAgrees = async (incremental: Radar) => {
      await manager.stop();
      manager = await startInProcess({ env: AGENTS, sandbox });
      expect(comparable(await radar())).toEqual(comparable(incremental));
    };
    const row = (answer: Radar, id: string) => answer.requirements.find((x) => x.requirementId === id);
    const before = await until('the radar to see all five', async () => {
      const answer = await radar();
      return answer.requirements.length === 5 && answer;
    });
    expect(before.pairs).toEqual([{ a: p, b: q, paths: ['a.txt'] }]);
    expect(before.requirements.every((x) => x.mergesCleanly === true && x.behindBy === 0)).toBe(true);

    // A land of p (a merge: two commits on main) makes q conflict with the base; s shares a.txt
    // with it and is merged again (cleanly); r and t are carried over, two commits further behind.
    const landed = await ok(
      manager.api.POST('/api/requirements/{id}/land', { body: { method: 'merge' }, params: { path: { id: p } } }),
    );
    const afterP = await until('the radar on the new base', async () => {
      const answer = await radar();
      return answer.requirements.every((x) => x.baseSha === landed.commit) && answer;
    });
    expect(row(afterP, p)).toBeUndefined();
    expect(row(afterP, q)).toMatchObject({ behindBy: 2, conflictPaths: ['a.txt'], mergesCleanly: false });
    expect(row(afterP, r)).toMatchObject({ behindBy: 2, conflictPaths: [], mergesCleanly: true });
    expect(row(afterP, s)).toMatchObject({ behindBy: 2, conflictPaths: [], mergesCleanly: true });
    expect(row(afterP, t)).toMatchObject({ behindBy: 2, conflictPaths: [], mergesCleanly: true });
    // q's conflict is with the base (p's line 1), not with s (line 5): no pair says otherwise.
    expect(afterP.pairs).toEqual([]);
    await coldAgrees(afterP);

    // A squash of r (one commit) touches nobody else's files: q's conflict, s and t are carried.
    const squashed = await ok(
      manager.api.POST('/api/requirements/{id}/land', { body: { method: 'squash' }, params: { path: { id: r } } }),
    );
    const afterR = await until('the radar on the squash', async () => {
      const answer = await radar();
      return answer.requirements.every((x) => x.baseSha === squashed.commit) && answer;
    });
    expect(row(afterR, r)).toBeUndefined();
    expect(row(afterR, q)).toMatchObject({ behindBy: 3, conflictPaths: ['a.txt'], mergesCleanly: false });
    expect(row(afterR, s)).toMatchObject({ behindBy: 3, mergesCleanly: true });
    expect(row(afterR, t)).toMatchObject({ behindBy: 3, mergesCleanly: true });
    expect(git(sandbox.workspace, 'rev-parse', 'main').trim()).toBe(squashed.commit);

    await coldAgrees(afterR);
  });

  it('refuses a conflict before a dirty checkout of the base, and the dirty checkout untouched', async () => {
    // Where the first test left them: q conflicts with main, t merges cleanly. q's agent was told
    // about its conflict: its run must be over before a land is asked for.
    await until(
      'q to rest',
      async () =>
        (await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: ids.q } } }))).session.state !==
        'running',
    );
    fs.appendFileSync(path.join(sandbox.workspace, 'b.txt'), 'not committed\n');
    const before = checkoutSnapshot(sandbox.workspace);
    const land = (id: string) =>
      manager.api.POST('/api/requirements/{id}/land', { body: { method: 'merge' }, params: { path: { id } } });
    const conflicting = await land(ids.q);
    expect([conflicting.status, conflicting.error?.code]).toEqual([409, 'land_conflict']);
    const dirty = await land(ids.t);
    expect([dirty.status, dirty.error?.code]).toEqual([409, 'base_checked_out_dirty']);
    expect(dirty.error?.message).toContain('b.txt');
    expect(checkoutSnapshot(sandbox.workspace)).toEqual(before);
    git(sandbox.workspace, 'checkout', '--', 'b.txt');
    expect((await land(ids.t)).status).toBe(200);
  });
});
