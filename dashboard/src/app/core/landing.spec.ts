import { T1, requirement } from '../../testing/builders';
import type { Translate } from './i18n';
import { en } from './i18n-messages';
import { fileList, landBlock, landed, queueBlock, radarChips } from './landing';
import type { Requirement } from './api-types';

const t = ((key: keyof typeof en, params: Record<string, string | number> = {}) =>
  Object.entries(params).reduce<string>(
    (text, [name, value]) => text.replace(`{${name}}`, String(value)),
    en[key],
  )) as Translate;

function withWork(landing: Partial<Requirement['landing']> = {}, extra: Partial<Requirement> = {}): Requirement {
  const r = requirement('req_b', T1, 'waiting_confirmation');
  return {
    ...r,
    baseRef: 'main',
    isolation: 'worktree',
    landing: {
      ...r.landing,
      baseSha: 'b'.repeat(40),
      behindBy: 0,
      headSha: 'h'.repeat(40),
      mergesCleanly: true,
      ...landing,
    },
    worktree: {
      ahead: 1,
      baseRef: 'main',
      baseSha: 'b'.repeat(40),
      behind: 0,
      branch: 'agent/b',
      dirty: false,
      headSha: 'h'.repeat(40),
      importError: null,
      layout: 'own_repository',
      mode: 'worktree',
      path: '/tmp/wt',
      ports: null,
      refreshedAt: T1,
      removedAt: null,
      workSha: 'h'.repeat(40),
    },
    ...extra,
  };
}

const chips = (r: Requirement, titles: Record<string, string> = {}) =>
  radarChips(r, t, (id) => titles[id]).map((c) => [c.kind, c.text, c.title]);

describe(radarChips.name, () => {
  it('names the one Requirement it conflicts with (the board’s title first) and how many files', () => {
    const r = withWork({ conflictsWith: [{ paths: ['a.txt', 'b.txt'], requirementId: 'req_a', title: 'Old title' }] });
    expect(chips(r, { req_a: 'Alpha' })).toEqual([['pair', 'conflicts with Alpha (2 files)', 'a.txt, b.txt']]);
    expect(chips(r)).toEqual([['pair', 'conflicts with Old title (2 files)', 'a.txt, b.txt']]);
    const one = withWork({ conflictsWith: [{ paths: ['a.txt'], requirementId: 'req_a', title: 'Alpha' }] });
    expect(chips(one)[0]?.[1]).toBe('conflicts with Alpha (1 file)');
  });

  it('counts several, and says a conflict with the base (with its files) instead of how far behind it is', () => {
    const r = withWork({
      behindBy: 3,
      conflictPaths: ['x.txt'],
      conflictsWith: [
        { paths: ['a.txt'], requirementId: 'req_a', title: 'Alpha' },
        { paths: ['c.txt'], requirementId: 'req_c', title: 'Charlie' },
      ],
      mergesCleanly: false,
    });
    expect(chips(r)).toEqual([
      ['pairs', 'conflicts with 2 Requirements', 'Alpha: a.txt\nCharlie: c.txt'],
      ['base', 'conflicts with base', 'Conflicts with main in x.txt'],
    ]);
  });

  it('says how far behind a clean one is, nothing for a clean one up to date or one not checked', () => {
    expect(chips(withWork({ behindBy: 2 }))).toEqual([
      ['behind', 'behind by 2', 'Commits on main that this branch lacks: 2'],
    ]);
    expect(chips(withWork())).toEqual([]);
    expect(chips(withWork({ behindBy: null, mergesCleanly: null }))).toEqual([]);
  });

  it('says only that it landed, once it did and while nothing new is there to land', () => {
    const r = withWork({
      conflictPaths: ['x'],
      landedAt: T1,
      landedCommit: 'abcdef0123456789',
      landedMethod: 'squash',
      mergesCleanly: null,
    });
    expect(chips(r)).toEqual([['landed', 'landed', `Landed (Squash) as abcdef0 at ${T1}`]]);
    expect(landed(r, t, () => 'noon')).toBe('Landed (Squash) as abcdef0 at noon');
    // New work after the land: the radar speaks again.
    expect(
      chips({ ...r, landing: { ...r.landing, conflictPaths: ['x'], mergesCleanly: false } }).map((c) => c[0]),
    ).toEqual(['base']);
  });
});

describe(landBlock.name, () => {
  it('refuses up front what has no branch to land, or a run at work; the queue waits for those two', () => {
    expect(landBlock(withWork())).toBeNull();
    expect(landBlock(withWork({}, { session: { ...withWork().session, state: 'running' } }))).toBe('running');
    expect(landBlock(withWork({}, { worktree: null }))).toBe('noBranch');
    expect(landBlock(withWork({}, { isolation: 'in_place' }))).toBe('inPlace');
    expect(landBlock(withWork({}, { status: 'cancelled' }))).toBe('cancelled');
    expect(queueBlock(withWork({}, { worktree: null }))).toBeNull();
    expect(queueBlock(withWork({}, { isolation: 'in_place' }))).toBe('inPlace');
  });
});

describe(fileList.name, () => {
  it('names the first few files and counts the rest', () => {
    expect(fileList(['a', 'b'])).toBe('a, b');
    expect(fileList(['a', 'b', 'c', 'd'], 2)).toBe('a, b +2');
  });
});
