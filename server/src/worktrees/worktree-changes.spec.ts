import { excludingLinks, isInside, parseRawNumstat, worktreeRelativePath } from './worktree-changes';

describe('parseRawNumstat', () => {
  it('pairs raw records with their counts: modified, added, deleted, renamed and binary', () => {
    const raw = [
      ':100644 100644 aaaaaaa bbbbbbb M',
      'src/app.ts',
      ':000000 100644 0000000 ccccccc A',
      'new file.txt',
      ':100644 000000 ddddddd 0000000 D',
      'gone.txt',
      ':100644 100644 eeeeeee eeeeeee R100',
      'old.txt',
      'dir/new.txt',
      ':000000 100644 0000000 fffffff A',
      'blob.bin',
    ];
    const numstat = [
      '2\t1\tsrc/app.ts',
      '3\t0\tnew file.txt',
      '0\t4\tgone.txt',
      '0\t0\t',
      'old.txt',
      'dir/new.txt',
      '-\t-\tblob.bin',
    ];
    expect(parseRawNumstat([...raw, ...numstat, ''].join('\0'))).toEqual([
      {
        additions: 2,
        binary: false,
        blob: 'bbbbbbb',
        deletions: 1,
        oldPath: null,
        path: 'src/app.ts',
        status: 'modified',
      },
      {
        additions: 3,
        binary: false,
        blob: 'ccccccc',
        deletions: 0,
        oldPath: null,
        path: 'new file.txt',
        status: 'added',
      },
      {
        additions: 0,
        binary: false,
        blob: '0000000',
        deletions: 4,
        oldPath: null,
        path: 'gone.txt',
        status: 'deleted',
      },
      {
        additions: 0,
        binary: false,
        blob: 'eeeeeee',
        deletions: 0,
        oldPath: 'old.txt',
        path: 'dir/new.txt',
        status: 'renamed',
      },
      { additions: 0, binary: true, blob: 'fffffff', deletions: 0, oldPath: null, path: 'blob.bin', status: 'added' },
    ]);
  });

  it('reads an empty diff as no files, and a cut one as its complete records', () => {
    expect(parseRawNumstat('')).toEqual([]);
    expect(parseRawNumstat(':100644 100644 a b M\0x.ts\0:100644 100644 a b M\0').map((f) => f.path)).toEqual(['x.ts']);
  });
});

describe('excludingLinks', () => {
  it('leaves linked paths out of a status, from the top of the worktree', () => {
    expect(excludingLinks([])).toEqual([]);
    expect(excludingLinks(['node_modules', 'web/.venv'])).toEqual([
      '--',
      '.',
      ':(exclude,top)node_modules',
      ':(exclude,top)web/.venv',
    ]);
  });
});

describe('worktreeRelativePath', () => {
  it('takes names that start with two dots: they are not a `..` segment', () => {
    for (const name of [
      '..foo',
      'a/..b',
      '..foo/bar',
      '...',
      'a/...',
      '.hidden',
      '.gitignore',
      '.github/workflows/ci.yml',
    ]) {
      expect(worktreeRelativePath(name)).toBe(name);
    }
    expect(worktreeRelativePath('./..foo')).toBe('..foo');
    expect(worktreeRelativePath('src/../x.ts')).toBe('x.ts');
  });

  it('refuses what climbs out, absolute paths, NULs, the worktree itself and its .git', () => {
    for (const bad of [
      '..',
      '../x',
      '../..foo',
      'src/../../x',
      'a/b/../../../x',
      '/etc/passwd',
      '',
      '.',
      './',
      'a/..',
      'x\0y',
      '.git',
      '.git/config',
      'a/../.git/HEAD',
    ]) {
      expect({ bad, path: worktreeRelativePath(bad) }).toEqual({ bad, path: null });
    }
  });
});

describe('isInside', () => {
  it('tells a child named `..x` from a path that climbs out', () => {
    expect(isInside('/w/top', '/w/top')).toBe(true);
    expect(isInside('/w/top/..foo', '/w/top')).toBe(true);
    expect(isInside('/w/top/a/..b', '/w/top')).toBe(true);
    expect(isInside('/w/top..x', '/w/top')).toBe(false);
    expect(isInside('/w/other', '/w/top')).toBe(false);
    expect(isInside('/w', '/w/top')).toBe(false);
  });
});
