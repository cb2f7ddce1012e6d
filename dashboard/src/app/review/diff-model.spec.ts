/// <reference types="node" />
// Real `git diff` output (a child process): this spec runs under Node in the unit project.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import fc from 'fast-check';

import { lineKey, parseFileDiff, splitRows } from './diff-model';

/** `git diff` of two texts, as the server's per-file diff gives it. */
function gitDiff(before: string, after: string, context: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-diff-model-'));
  try {
    fs.writeFileSync(path.join(dir, 'a'), before);
    fs.writeFileSync(path.join(dir, 'b'), after);
    return spawnSync('git', ['diff', '--no-index', `-U${context}`, '--', 'a', 'b'], { cwd: dir, encoding: 'utf8' })
      .stdout;
  } finally {
    fs.rmSync(dir, { force: true, recursive: true });
  }
}

// Lines the agent may write that look like diff syntax: the parser reads hunks by their counts.
const line = fc.oneof(
  fc.constantFrom('', '@@ -1,2 +1,2 @@', 'diff --git a/x b/x', '+plus', '-minus', ' space', '\\ No newline', 'x'),
  fc.string({ maxLength: 8 }).filter((s) => !s.includes('\n') && !s.includes('\r')),
);
const file = fc.array(line, { maxLength: 12 }).map((lines) => lines.map((l) => `${l}\n`).join(''));

describe('the review view’s diff model', () => {
  it('reads back both files from a whole-file diff, whatever their lines look like', () => {
    fc.assert(
      fc.property(file, file, (before, after) => {
        fc.pre(before !== after);
        const diff = parseFileDiff(gitDiff(before, after, 100_000));
        const lines = diff.hunks.flatMap((h) => h.lines);
        const old = lines.filter((l) => l.kind !== 'add').map((l) => `${l.text}\n`);
        const now = lines.filter((l) => l.kind !== 'del').map((l) => `${l.text}\n`);
        expect(old.join('')).toBe(before);
        expect(now.join('')).toBe(after);
        // Numbers count up from 1 on each side, and every row's key is its file's own.
        expect(lines.filter((l) => l.kind !== 'add').map((l) => l.oldLine)).toEqual(old.map((_, k) => k + 1));
        expect(lines.filter((l) => l.kind !== 'del').map((l) => l.newLine)).toEqual(now.map((_, k) => k + 1));
        expect(new Set(lines.map(lineKey)).size).toBe(lines.length);
      }),
      { numRuns: 60 },
    );
  });

  it('pairs removals with the additions after them in the split layout, each line once', () => {
    fc.assert(
      fc.property(file, file, (before, after) => {
        fc.pre(before !== after);
        for (const hunk of parseFileDiff(gitDiff(before, after, 1)).hunks) {
          const rows = splitRows(hunk);
          expect(rows.flatMap((r) => (r.left && r.left.kind !== 'context' ? [r.left] : []))).toEqual(
            hunk.lines.filter((l) => l.kind === 'del'),
          );
          expect(rows.flatMap((r) => (r.right && r.right.kind !== 'context' ? [r.right] : []))).toEqual(
            hunk.lines.filter((l) => l.kind === 'add'),
          );
          expect(rows.every((r) => (r.left?.kind === 'context') === (r.right?.kind === 'context'))).toBe(true);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('says a binary file is one, and keeps what was read of a diff cut short', () => {
    expect(parseFileDiff('diff --git a/x b/x\nBinary files a/x and b/x differ\n')).toEqual({ binary: true, hunks: [] });
    const cut = parseFileDiff('@@ -1,3 +1,3 @@\n a\n-b\n+c\n');
    expect(cut.hunks[0].lines.map((l) => [l.kind, l.oldLine, l.newLine, l.text])).toEqual([
      ['context', 1, 1, 'a'],
      ['del', 2, null, 'b'],
      ['add', null, 2, 'c'],
    ]);
  });
});
