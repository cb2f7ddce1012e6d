/**
 * One file's unified diff (`git diff` of a single path) as rows the review view renders itself:
 * every line a row it can focus and anchor a thread to, in unified or split layout. Hunks are read
 * by their counts, not by what a line looks like, so a line of the agent's text that starts with
 * `@@` or `diff --git` stays a line.
 */

export type DiffLineKind = 'context' | 'add' | 'del';

export interface DiffLine {
  kind: DiffLineKind;
  /** The line's number before the change (null on an added line). */
  oldLine: number | null;
  /** The line's number after the change (null on a removed line). */
  newLine: number | null;
  text: string;
}

export interface DiffHunk {
  header: string;
  lines: DiffLine[];
}

export interface FileDiff {
  hunks: DiffHunk[];
  binary: boolean;
}

/** Which side a comment sits on: the agent's work (`new`) or the merge base (`old`), as the API says. */
export type LineSide = 'new' | 'old';

/** Where a row can be commented on: a removed line on the old side, every other on the new. */
export function lineSide(line: DiffLine): { side: LineSide; line: number } {
  return line.kind === 'del'
    ? { line: line.oldLine as number, side: 'old' }
    : { line: line.newLine as number, side: 'new' };
}

/** The key of a row, unique in its file: its side and line number. */
export function lineKey(line: DiffLine): string {
  const at = lineSide(line);
  return `${at.side}:${at.line}`;
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

export function parseFileDiff(text: string): FileDiff {
  const lines = text.split('\n');
  const hunks: DiffHunk[] = [];
  let binary = false;
  let i = 0;
  while (i < lines.length) {
    const header = HUNK.exec(lines[i]);
    if (!header) {
      if (lines[i].startsWith('Binary files ') || lines[i] === 'GIT binary patch') {
        binary = true;
      }
      i += 1;
      continue;
    }
    let oldLine = Number(header[1]);
    let newLine = Number(header[3]);
    let oldLeft = header[2] === undefined ? 1 : Number(header[2]);
    let newLeft = header[4] === undefined ? 1 : Number(header[4]);
    const hunk: DiffHunk = { header: lines[i], lines: [] };
    i += 1;
    while (i < lines.length && (oldLeft > 0 || newLeft > 0)) {
      const line = lines[i];
      const mark = line[0];
      const body = line.slice(1);
      if (mark === '\\') {
        // "\ No newline at end of file": about the line before, not a line.
      } else if (mark === '+' && newLeft > 0) {
        hunk.lines.push({ kind: 'add', newLine: newLine++, oldLine: null, text: body });
        newLeft -= 1;
      } else if (mark === '-' && oldLeft > 0) {
        hunk.lines.push({ kind: 'del', newLine: null, oldLine: oldLine++, text: body });
        oldLeft -= 1;
      } else if ((mark === ' ' || (line === '' && i < lines.length - 1)) && oldLeft > 0 && newLeft > 0) {
        // (An empty line inside: a context line whose space an editor or a mail stripped.)
        hunk.lines.push({ kind: 'context', newLine: newLine++, oldLine: oldLine++, text: body });
        oldLeft -= 1;
        newLeft -= 1;
      } else {
        break; // a diff cut short (the server's size limit): what was read stays
      }
      i += 1;
    }
    hunks.push(hunk);
  }
  return { binary, hunks };
}

/** One row of the split layout: the old side on the left, the new on the right (either may be empty). */
export interface SplitRow {
  left: DiffLine | null;
  right: DiffLine | null;
}

/** A hunk's lines side by side: context on both sides, each run of removals paired with the additions after it. */
export function splitRows(hunk: DiffHunk): SplitRow[] {
  const rows: SplitRow[] = [];
  let dels: DiffLine[] = [];
  let adds: DiffLine[] = [];
  const flush = () => {
    for (let k = 0; k < Math.max(dels.length, adds.length); k++) {
      rows.push({ left: dels[k] ?? null, right: adds[k] ?? null });
    }
    dels = [];
    adds = [];
  };
  for (const line of hunk.lines) {
    if (line.kind === 'context') {
      flush();
      rows.push({ left: line, right: line });
    } else if (line.kind === 'del') {
      if (adds.length > 0) {
        flush();
      }
      dels.push(line);
    } else {
      adds.push(line);
    }
  }
  flush();
  return rows;
}
