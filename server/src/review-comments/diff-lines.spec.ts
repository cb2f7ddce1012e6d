import { excerptOf, hunksOf, linesShown, moveRange } from './diff-lines';

const DIFF = [
  'diff --git a/src/app.ts b/src/app.ts',
  'index 1111111..2222222 100644',
  '--- a/src/app.ts',
  '+++ b/src/app.ts',
  '@@ -1,4 +1,5 @@',
  ' one',
  '-two',
  '+TWO',
  '+two and a half',
  ' three',
  ' four',
  '@@ -10,2 +11,2 @@ function f() {',
  ' ten',
  '-eleven',
  '+ELEVEN',
  '\\ No newline at end of file',
  '',
].join('\n');

describe('the lines a diff shows', () => {
  it('numbers context and added lines on the new side, context and removed lines on the old', () => {
    expect([...linesShown(DIFF, 'new')]).toEqual([
      [1, 'one'],
      [2, 'TWO'],
      [3, 'two and a half'],
      [4, 'three'],
      [5, 'four'],
      [11, 'ten'],
      [12, 'ELEVEN'],
    ]);
    expect([...linesShown(DIFF, 'old')]).toEqual([
      [1, 'one'],
      [2, 'two'],
      [3, 'three'],
      [4, 'four'],
      [10, 'ten'],
      [11, 'eleven'],
    ]);
  });

  it('reads each hunk for the lines its header counts: an empty line is a blank context line, and a cut diff ends it', () => {
    const blank = ['@@ -1,3 +1,3 @@', ' a', '', '-b', '+B'].join('\n');
    expect([...linesShown(blank, 'new')]).toEqual([
      [1, 'a'],
      [2, ''],
      [3, 'B'],
    ]);
    expect([...linesShown('@@ -1,5 +1,5 @@\n one\n two\ndiff --git a/x b/x\n', 'new')]).toEqual([
      [1, 'one'],
      [2, 'two'],
    ]);
  });

  it('quotes a range only when every line of it is shown', () => {
    const shown = linesShown(DIFF, 'new');
    expect(excerptOf(shown, 2, 3)).toBe('TWO\ntwo and a half');
    expect(excerptOf(shown, 5, 11)).toBeNull(); // 6–10 are between the hunks
    expect(excerptOf(shown, 13, 13)).toBeNull();
  });

  it('reads -U0 hunk headers, a missing count meaning one line', () => {
    expect(hunksOf('@@ -3 +3 @@\n-a\n+b\n@@ -7,0 +8,5 @@\n+x\n')).toEqual([
      { newCount: 1, newStart: 3, oldCount: 1, oldStart: 3 },
      { newCount: 5, newStart: 8, oldCount: 0, oldStart: 7 },
    ]);
  });
});

describe('moving a range across a change', () => {
  it('moves it down by the lines added above it, and up by those removed above it', () => {
    expect(moveRange([{ newCount: 5, newStart: 1, oldCount: 0, oldStart: 0 }], 10, 12)).toEqual({
      endLine: 17,
      line: 15,
    });
    expect(moveRange([{ newCount: 0, newStart: 1, oldCount: 3, oldStart: 2 }], 10, 10)).toEqual({
      endLine: 7,
      line: 7,
    });
    // A change below it, and lines added right after its last line, leave it where it is.
    expect(
      moveRange(
        [
          { newCount: 2, newStart: 30, oldCount: 1, oldStart: 30 },
          { newCount: 1, newStart: 13, oldCount: 0, oldStart: 12 },
        ],
        10,
        12,
      ),
    ).toEqual({ endLine: 12, line: 10 });
  });

  it('is outdated by a change of one of its lines, or lines added inside it', () => {
    expect(moveRange([{ newCount: 1, newStart: 11, oldCount: 1, oldStart: 11 }], 10, 12)).toBeNull();
    expect(moveRange([{ newCount: 4, newStart: 8, oldCount: 3, oldStart: 8 }], 10, 12)).toBeNull();
    expect(moveRange([{ newCount: 2, newStart: 11, oldCount: 0, oldStart: 10 }], 10, 12)).toBeNull();
    expect(moveRange([{ newCount: 0, newStart: 11, oldCount: 1, oldStart: 12 }], 12, 12)).toBeNull();
  });
});
