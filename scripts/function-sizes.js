'use strict';
// The longest functions of the source (issue 50's "no function over 60 lines"): every function,
// method, constructor, accessor and arrow function with a block body, by its lines from its first
// to its last, read with the TypeScript compiler's parser (no type check: fast, exact).
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

const { SKIPPED, isTypeScriptSource, walk } = require('./source-tree');

const root = path.resolve(__dirname, '..');
// Migrations are declarative tables of SQL, not functions to keep short.
const SKIP_MIGRATIONS = new Set([...SKIPPED, 'migrations']);

function nameOf(node, file) {
  const own = node.name && ts.isIdentifier(node.name) ? node.name.text : null;
  if (own) return own;
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  return `(anonymous, line ${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1})`;
}

/**
 * Declarative tables written as one function: a list of the MCP tools' definitions, each entry a
 * name, a schema and a one-line call. Issue 50 excepts them from the 60-line rule; they are listed
 * in docs/architecture.md's figures.
 */
const DECLARATIVE = new Set([
  'server/src/agent-tools/agent-tools.ts#agentTools',
  'cli/src/owner/owner-tools.ts#ownerTools',
]);

/** Every function of the given source trees, longest first: { file, name, lines }. */
function all(trees = ['server/src', 'cli/src', 'dashboard/src', 'libs/contracts/src']) {
  const found = [];
  for (const file of trees.flatMap((t) => walk(path.join(root, t), isTypeScriptSource, SKIP_MIGRATIONS))) {
    const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node) => {
      if (ts.isFunctionLike(node) && node.body && ts.isBlock(node.body)) {
        const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        found.push({ file: path.relative(root, file), lines: last - first + 1, name: nameOf(node, source) });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found.sort((a, b) => b.lines - a.lines);
}

/** The `count` longest functions: { file, name, lines }. */
function longest(trees, count = 5) {
  return all(trees).slice(0, count);
}

/** The functions over `limit` lines but the declarative tables, and those tables. */
function over(limit, trees) {
  const long = all(trees).filter((f) => f.lines > limit);
  const table = (f) => DECLARATIVE.has(`${f.file}#${f.name}`);
  return { functions: long.filter((f) => !table(f)), tables: long.filter(table) };
}

module.exports = { longest, over };
