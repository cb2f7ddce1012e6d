'use strict';
// Every reference the code and the docs make to a document resolves (issue 50): a cited
// `docs/<name>.md` exists, its `#anchor` is one of its headings, an "invariant N" is one of the
// numbered invariants of docs/architecture.md, a "protocol §N" one of docs/protocol.md's sections.
// Numbered sections of another document ("architecture §" and a number) are refused: they drifted.
// Part of `npm run architecture -- --check`.
const fs = require('node:fs');
const path = require('node:path');

const { walk } = require('./source-tree');

const root = path.resolve(__dirname, '..');
const docs = path.join(root, 'docs');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file) {
  const text = fs.readFileSync(file, 'utf8');
  return new Set([...text.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => slug(m[1])));
}

/** How many invariants docs/architecture.md numbers under "## Invariants". */
function invariantCount() {
  const text = fs.readFileSync(path.join(docs, 'architecture.md'), 'utf8');
  const section = /^## Invariants\n([\s\S]*?)(?=^## )/m.exec(text)?.[1] ?? '';
  return [...section.matchAll(/^(\d+)\. /gm)].length;
}

function protocolSections() {
  const file = path.join(docs, 'protocol.md');
  if (!fs.existsSync(file)) return new Set();
  return new Set([...fs.readFileSync(file, 'utf8').matchAll(/^(\d+)\. /gm)].map((m) => m[1]));
}

/** The problems found: one line each, naming the file and line. */
function check() {
  const code = (file) => /\.(ts|js|mjs|html)$/.test(file) && !file.endsWith('.d.ts');
  const sources = ['server', 'cli', 'dashboard/src', 'libs', 'test', 'scripts', 'bench'].flatMap((d) =>
    walk(path.join(root, d), code),
  );
  const markdown = [...walk(docs, (f) => f.endsWith('.md')), path.join(root, 'README.md')].filter(
    (f) => path.basename(f) !== 'protocol.md',
  );
  const invariants = invariantCount();
  const protocol = protocolSections();
  const anchors = new Map();
  const anchorOk = (doc, anchor) => {
    const file = path.join(docs, doc);
    if (!fs.existsSync(file)) return false;
    if (!anchors.has(file)) anchors.set(file, anchorsOf(file));
    return !anchor || anchors.get(file).has(anchor);
  };
  const problems = [];
  for (const file of [...sources, ...markdown]) {
    const isDoc = file.endsWith('.md');
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      const where = `${path.relative(root, file)}:${i + 1}`;
      for (const m of line.matchAll(/\b[Aa]rchitecture §\s*\d/g))
        problems.push(`${where}: "${m[0]}…" cites a section number; name it (docs/architecture.md#<heading>)`);
      for (const m of line.matchAll(/\bdocs\/([\w.-]+\.md)(?:#([\w-]+))?/g)) {
        if (!anchorOk(m[1], m[2])) problems.push(`${where}: ${m[0]} does not resolve`);
      }
      if (isDoc && path.dirname(file) === docs) {
        for (const m of line.matchAll(/\]\(([\w.-]+\.md)(?:#([\w-]+))?\)/g)) {
          if (!anchorOk(m[1], m[2])) problems.push(`${where}: (${m[1]}${m[2] ? `#${m[2]}` : ''}) does not resolve`);
        }
      }
      for (const m of line.matchAll(/\b[Ii]nvariants? (\d+)/g)) {
        const n = Number(m[1]);
        if (n < 1 || n > invariants)
          problems.push(`${where}: ${m[0]} is not one of the ${invariants} invariants of docs/architecture.md`);
      }
      for (const m of line.matchAll(/\bprotocol §(\d+)/g)) {
        if (!protocol.has(m[1])) problems.push(`${where}: ${m[0]} is not a section of docs/protocol.md`);
      }
    });
  }
  return problems;
}

module.exports = { check, slug };
