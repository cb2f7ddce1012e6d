import type { ReviewCommentSide } from '@libs/contracts';

/** One hunk of a unified diff: where it starts and how many lines it covers on each side. */
export interface Hunk {
  oldStart: number;
  oldCount: number;
  newStart: number;
  newCount: number;
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

function hunkOf(line: string): Hunk | null {
  const match = HUNK_HEADER.exec(line);
  if (!match) {
    return null;
  }
  return {
    newCount: match[4] === undefined ? 1 : Number(match[4]),
    newStart: Number(match[3]),
    oldCount: match[2] === undefined ? 1 : Number(match[2]),
    oldStart: Number(match[1]),
  };
}

/**
 * The lines a file's unified diff shows on one side, by their number there: context and added
 * lines for `new`, context and removed lines for `old`. What a review comment may be written on.
 * Each hunk is read for as many lines as its header counts (an empty line is a blank context line,
 * as git writes it with diff.suppressBlankEmpty).
 */
export function linesShown(diff: string, side: ReviewCommentSide): Map<number, string> {
  const shown = new Map<number, string>();
  const lines = diff.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const hunk = hunkOf(lines[i]);
    if (!hunk) {
      continue;
    }
    let oldLine = hunk.oldStart;
    let newLine = hunk.newStart;
    let oldLeft = hunk.oldCount;
    let newLeft = hunk.newCount;
    while ((oldLeft > 0 || newLeft > 0) && i + 1 < lines.length) {
      i += 1;
      const line = lines[i];
      const mark = line[0] ?? ' ';
      const text = line.slice(1);
      if (mark === '+') {
        if (side === 'new') {
          shown.set(newLine, text);
        }
        newLine += 1;
        newLeft -= 1;
      } else if (mark === '-') {
        if (side === 'old') {
          shown.set(oldLine, text);
        }
        oldLine += 1;
        oldLeft -= 1;
      } else if (mark === ' ') {
        shown.set(side === 'new' ? newLine : oldLine, text);
        oldLine += 1;
        newLine += 1;
        oldLeft -= 1;
        newLeft -= 1;
      } else if (mark !== '\\') {
        break; // not a hunk line: the diff was cut short
      }
    }
  }
  return shown;
}

/** The hunks of a diff (read with `-U0`: no context, so each hunk is exactly what changed). */
export function hunksOf(diff: string): Hunk[] {
  return diff
    .split('\n')
    .map(hunkOf)
    .filter((h): h is Hunk => h !== null);
}

/**
 * Where lines [line, endLine] of a file are after the change these `-U0` hunks make: moved by
 * what was added or removed above them, or null when a hunk touches them (or adds lines between
 * them) — the thread is then outdated. GitHub's rule, which a reviewer expects.
 */
export function moveRange(
  hunks: readonly Hunk[],
  line: number,
  endLine: number,
): { line: number; endLine: number } | null {
  let shift = 0;
  for (const hunk of hunks) {
    if (hunk.oldCount === 0) {
      // Lines added after old line `oldStart`.
      if (hunk.oldStart < line) {
        shift += hunk.newCount;
      } else if (hunk.oldStart < endLine) {
        return null;
      }
      continue;
    }
    const last = hunk.oldStart + hunk.oldCount - 1;
    if (last < line) {
      shift += hunk.newCount - hunk.oldCount;
    } else if (hunk.oldStart <= endLine) {
      return null;
    }
  }
  return { endLine: endLine + shift, line: line + shift };
}

/** Lines [line, endLine] of `shown`, joined by newlines; null when one of them is not shown. */
export function excerptOf(shown: ReadonlyMap<number, string>, line: number, endLine: number): string | null {
  const lines: string[] = [];
  for (let n = line; n <= endLine; n += 1) {
    const text = shown.get(n);
    if (text === undefined) {
      return null;
    }
    lines.push(text);
  }
  return lines.join('\n');
}
