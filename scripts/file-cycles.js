'use strict';
// File-level import cycles (issue 50): a group of source files that import each other, directly
// or around a loop, type-only imports included (a cycle of types is still two files that cannot be
// read, moved or split apart). Feature cycles (architecture-report.js) cannot see a cycle inside
// one folder; this can. Part of `npm run architecture -- --check`.
const fs = require('node:fs');
const path = require('node:path');

const { isTypeScriptSource, walk } = require('./source-tree');

const root = path.resolve(__dirname, '..');
const TREES = ['server/src', 'cli/src', 'libs/contracts/src', 'libs/api-client/src', 'dashboard/src'];
const ALIASES = [
  ['@server/', 'server/src/'],
  ['@libs/contracts', 'libs/contracts/src/index'],
  ['@libs/api-client', 'libs/api-client/src/index'],
];
const IMPORT = /(?:import|export)\s[^'";]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)|^import\s+'([^']+)'/gm;

/** The import graph of the source trees: file → the files it imports. */
function graph() {
  const files = TREES.flatMap((tree) => walk(path.join(root, tree), isTypeScriptSource));
  const known = new Set(files);
  const resolve = (from, spec) => {
    let target = null;
    for (const [alias, dir] of ALIASES) {
      if (spec === alias || spec.startsWith(alias)) target = path.join(root, dir + spec.slice(alias.length));
    }
    if (!target && spec.startsWith('.')) target = path.resolve(path.dirname(from), spec);
    if (!target) return null;
    return [`${target}.ts`, path.join(target, 'index.ts')].find((c) => known.has(c)) ?? null;
  };
  const edges = new Map();
  for (const file of files) {
    const to = new Set();
    for (const m of fs.readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const target = resolve(file, m[1] ?? m[2] ?? m[3]);
      if (target && target !== file) to.add(target);
    }
    edges.set(file, to);
  }
  return edges;
}

/** Strongly connected groups of more than one file (Tarjan), as paths from the root. */
function cycles() {
  const edges = graph();
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v) === index.get(v)) {
      const group = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        group.push(path.relative(root, w));
      } while (w !== v);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
}

module.exports = { cycles };
