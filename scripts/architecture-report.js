#!/usr/bin/env node
// `node scripts/architecture-report.js [--json]`: the figures issue 27 tracks, read off the tree as
// it is, so a maintainer can see whether the code is getting easier or harder to follow:
// - feature import cycles: strongly connected groups of server/src feature folders (core, events
//   and the other shared folders count as features too; a folder importing itself does not count);
// - services that inject another feature's repository (constructor parameters typed `…Repository`);
// - the largest source files of the server and the dashboard;
// - raw `send(` calls in the end-to-end suites (untyped answers) against the typed client's calls.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
// Piped into `head`: a closed stdout is the reader saying it has enough.
process.stdout.on('error', (err) => process.exit(err.code === 'EPIPE' ? 0 : 1));
const { walk } = require('./source-tree');

const serverRoot = path.join(root, 'server', 'src');

const isSource = (f) => f.endsWith('.ts') && !f.endsWith('.spec.ts') && !f.endsWith('.d.ts');
const serverFiles = walk(serverRoot, isSource);
const featureOf = (file) => {
  const rel = path.relative(serverRoot, file).split(path.sep);
  return rel.length > 1 ? rel[0] : null;
};

// Import edges between feature folders. core/core.module.ts is the composition root that lists
// every feature's entities for TypeORM: its imports are wiring, not a dependency of core.
const COMPOSITION_ROOTS = new Set([path.join(serverRoot, 'core', 'core.module.ts')]);
const IMPORT = /(?:import|export)\s[^'";]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g;
const edges = new Map();
for (const file of serverFiles) {
  const from = featureOf(file);
  if (!from || COMPOSITION_ROOTS.has(file)) continue;
  const text = fs.readFileSync(file, 'utf8');
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2];
    let target = null;
    if (spec.startsWith('@server/')) target = path.join(serverRoot, spec.slice('@server/'.length));
    else if (spec.startsWith('.')) target = path.resolve(path.dirname(file), spec);
    if (!target || !target.startsWith(serverRoot)) continue;
    const to = featureOf(target + '.ts') ?? featureOf(path.join(target, 'index.ts'));
    if (to && to !== from) {
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from).add(to);
    }
  }
}

// Tarjan's strongly connected components: every group of two or more features is one cycle.
function components(graph) {
  let index = 0;
  const stack = [];
  const meta = new Map();
  const groups = [];
  const nodes = new Set([...graph.keys(), ...[...graph.values()].flatMap((s) => [...s])]);
  const visit = (v) => {
    meta.set(v, { index, low: index, on: true });
    index++;
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!meta.has(w)) {
        visit(w);
        meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).low);
      } else if (meta.get(w).on) {
        meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).index);
      }
    }
    if (meta.get(v).low === meta.get(v).index) {
      const group = [];
      let w;
      do {
        w = stack.pop();
        meta.get(w).on = false;
        group.push(w);
      } while (w !== v);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const v of [...nodes].sort()) if (!meta.has(v)) visit(v);
  return groups;
}
const cycles = components(edges);
const mutualPairs = [];
for (const [a, targets] of edges)
  for (const b of targets) if (a < b && edges.get(b)?.has(a)) mutualPairs.push(`${a}↔${b}`);

// Repository classes and who injects them.
const repositoryFeature = new Map();
for (const file of serverFiles) {
  for (const match of fs.readFileSync(file, 'utf8').matchAll(/export class (\w+Repository)\b/g)) {
    repositoryFeature.set(match[1], featureOf(file));
  }
}
const foreignInjections = [];
for (const file of serverFiles) {
  const text = fs.readFileSync(file, 'utf8');
  const ctor = /constructor\s*\(([\s\S]*?)\)\s*\{/.exec(text);
  if (!ctor) continue;
  for (const match of ctor[1].matchAll(/:\s*(\w+Repository)\b/g)) {
    const owner = repositoryFeature.get(match[1]);
    if (owner && owner !== featureOf(file))
      foreignInjections.push({ file: path.relative(root, file), repository: match[1] });
  }
}

// Lines as `wc -l` counts them (a last line without its newline counts too).
const lines = (f) => {
  const text = fs.readFileSync(f, 'utf8');
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
};
const dashboardFiles = walk(path.join(root, 'dashboard', 'src'), (f) => isSource(f));
const largest = (files, n) =>
  files
    .map((f) => ({ file: path.relative(root, f), lines: lines(f) }))
    .sort((a, b) => b.lines - a.lines)
    .slice(0, n);

// Issue 50's limits for hand-written source (server, CLI, dashboard, contracts): files over 400
// lines and functions over 60. Generated files and declarative tables (translations, the MCP tools'
// definitions) are excepted, and counted apart.
function overLimits() {
  const TABLE_FILES = new Set(['dashboard/src/app/core/i18n-messages.ts']);
  const files = [
    ...serverFiles,
    ...walk(path.join(root, 'cli', 'src'), isSource),
    ...dashboardFiles,
    ...walk(path.join(root, 'libs', 'contracts', 'src'), isSource),
  ]
    .map((f) => ({ file: path.relative(root, f), lines: lines(f) }))
    .filter((f) => f.lines > 400);
  const functions = require('./function-sizes').over(60);
  return {
    files: files.filter((f) => !TABLE_FILES.has(f.file)).length,
    functions: functions.functions.length,
    tables: [...files.filter((f) => TABLE_FILES.has(f.file)), ...functions.tables].map((f) =>
      f.name ? `${f.name} (${path.basename(f.file)})` : path.basename(f.file),
    ),
  };
}

// The domain event map (server/src/core/domain-events.ts): each event with the file that declares
// it, the files that emit it and the handlers (Class.method) that react, read off the source, so
// "who reacts when a PR merges?" has one answer to search for.
const domainEvents = new Map();
const eventOf = (name) => {
  if (!domainEvents.has(name))
    domainEvents.set(name, { declaredIn: null, delivery: null, emitters: new Set(), handlers: [] });
  return domainEvents.get(name);
};
for (const file of serverFiles) {
  const text = fs.readFileSync(file, 'utf8');
  const rel = path.relative(root, file);
  if (/declare module '[^']*core\/domain-events'/.test(text)) {
    for (const match of text.matchAll(/'([\w.]+)':\s*\{\s*args:[\s\S]*?delivery:\s*'(\w+)'/g)) {
      Object.assign(eventOf(match[1]), { declaredIn: rel, delivery: match[2] });
    }
  }
  for (const match of text.matchAll(/domainEvents\.(?:emit|settle|notify)\(\s*'([\w.]+)'/g))
    eventOf(match[1]).emitters.add(rel);
  const className = /export class (\w+)/.exec(text)?.[1] ?? path.basename(file);
  for (const match of text.matchAll(
    /@OnDomainEvent\('([\w.]+)'(?:[^()]|\([^()]*\))*\)\s*(?:@OnDomainEvent\((?:[^()]|\([^()]*\))*\)\s*)*(?:async\s+)?(\w+)\(/g,
  )) {
    eventOf(match[1]).handlers.push(`${className}.${match[2]}`);
  }
  // A method handling several events: the decorators stacked above one method.
  for (const match of text.matchAll(
    /((?:@OnDomainEvent\('[\w.]+'(?:[^()]|\([^()]*\))*\)\s*){2,})(?:async\s+)?(\w+)\(/g,
  )) {
    for (const inner of [...match[1].matchAll(/@OnDomainEvent\('([\w.]+)'/g)].slice(1))
      eventOf(inner[1]).handlers.push(`${className}.${match[2]}`);
  }
}

// The reactions to committed events (server/src/events/on-committed.ts): each `@OnCommitted(types)`
// method with the events it is handed; a list of types may be a named constant (`RUN_ENDS`).
const typeLists = new Map();
for (const file of serverFiles) {
  const text = fs.readFileSync(file, 'utf8');
  for (const match of text.matchAll(/export const (\w+) = \[([^\]]*)\]/g)) {
    const items = [...match[2].matchAll(/'([\w.]+)'/g)].map((m) => m[1]);
    if (items.length > 0) typeLists.set(match[1], items);
  }
}
const reactions = [];
for (const file of serverFiles) {
  const text = fs.readFileSync(file, 'utf8');
  const className = /export class (\w+)/.exec(text)?.[1] ?? path.basename(file);
  for (const match of text.matchAll(
    /@OnCommitted\(\s*(\[[^\]]*\]|\w+)(?:[^()]|\([^()]*\))*\)\s*(?:async\s+)?(\w+)\(/g,
  )) {
    const types = [];
    for (const part of match[1]
      .replace(/^\[|\]$/g, '')
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean)) {
      const name = part.replace(/^\.\.\./, '');
      if (/^'[\w.]+'$/.test(name)) types.push(name.slice(1, -1));
      else types.push(...(typeLists.get(name) ?? [`?${name}`]));
    }
    reactions.push({ file: path.relative(root, file), reaction: `${className}.${match[2]}`, types });
  }
}
reactions.sort((a, b) => a.reaction.localeCompare(b.reaction));

const testFiles = walk(
  path.join(root, 'test'),
  (f) =>
    f.endsWith('.ts') &&
    !f.includes(`${path.sep}agent-clis${path.sep}`) &&
    !f.includes(`${path.sep}node-runtimes${path.sep}`),
);
// Raw: `send(` (answers typed `any`, still to convert). Deliberately untyped: `sendUntyped(` and
// `sendRaw(` (malformed bodies, odd headers, undocumented routes). Typed: a call through the
// typed client of test/support/api.ts or the generated client.
let rawSend = 0;
let untypedOnPurpose = 0;
let typedClient = 0;
for (const f of testFiles) {
  // Code only: comment lines (a helper's documented example) are not calls.
  const text = fs
    .readFileSync(f, 'utf8')
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
    .join('\n');
  // Calls of test/support/http.ts's `send` only: the model stub and the fake GitHub have `send`
  // functions of their own (stream events, HTTP answers), and a definition is not a call.
  const importsSend = /import\s*\{[^}]*\bsend\b[^}]*\}\s*from\s*'\.{1,2}\/(support\/)?http'/.test(text);
  if (importsSend) rawSend += (text.match(/(?<!function )\bsend\(/g) ?? []).length;
  untypedOnPurpose += (text.match(/(?<!function )\b(sendUntyped|sendRaw)\(/g) ?? []).length;
  // A typed call names a documented path: `.GET('/api/…'` (manager.api, apiClient(origin, …), a helper returning one).
  typedClient += (text.match(/\.(GET|POST|PUT|PATCH|DELETE)\(\s*'\/api\//g) ?? []).length;
}

const report = {
  featureCycles: cycles,
  fileCycles: require('./file-cycles').cycles(),
  longestFunctions: require('./function-sizes').longest(),
  mutualPairs,
  foreignRepositoryInjections: foreignInjections,
  largestServerFiles: largest(serverFiles, 5),
  overLimits: overLimits(),
  largestDashboardFiles: largest(dashboardFiles, 3),
  tests: { rawSendCalls: rawSend, untypedOnPurposeCalls: untypedOnPurpose, typedClientCalls: typedClient },
  reactions,
  domainEvents: Object.fromEntries(
    [...domainEvents]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, e]) => [name, { ...e, emitters: [...e.emitters] }]),
  ),
};
// Resource shapes in libs/contracts (issue 50 §4): aliases of the generated schema (the DTO is
// their one definition) against interfaces still written by hand there.
const contractShapes = (() => {
  const text = fs.readFileSync(path.join(root, 'libs', 'contracts', 'src', 'resources.ts'), 'utf8');
  return {
    aliases: (text.match(/^export type \w+ = Schemas\[/gm) ?? []).length,
    written: (text.match(/^export interface \w+/gm) ?? []).length,
  };
})();
// The blocks of docs/architecture.md written from the source (`--write`; `--check` compares).
const ARCHITECTURE_DOC = path.join(root, 'docs', 'architecture.md');
const code = (text) => `\`${text}\``;
const generated = {
  events: [
    '| Event | Delivery | Declared in | Emitted by | Handled by |',
    '| --- | --- | --- | --- | --- |',
    ...Object.entries(report.domainEvents)
      .map(([name, e]) =>
        [
          code(name),
          e.delivery ?? 'undeclared',
          e.declaredIn ? code(path.relative('server/src', e.declaredIn)) : '?',
          e.emitters.map((f) => code(path.relative('server/src', f))).join(', ') || 'nobody',
          e.handlers.map(code).join(', ') || 'nobody',
        ].join(' | '),
      )
      .map((row) => `| ${row} |`),
  ].join('\n'),
  reactions: [
    '| Reaction | Handed the committed events | In |',
    '| --- | --- | --- |',
    ...reactions.map(
      (r) => `| ${code(r.reaction)} | ${r.types.map(code).join(', ')} | ${code(path.relative('server/src', r.file))} |`,
    ),
  ].join('\n'),
  figures: [
    '| Figure | Now |',
    '| --- | --- |',
    `| Feature import cycles / file import cycles | ${report.featureCycles.length} / ${report.fileCycles.length} (\`npm test\` fails on one) |`,
    `| Feature→feature imports (folder pairs) | ${[...edges.values()].reduce((n, to) => n + to.size, 0)} |`,
    `| Services injecting another feature's repository | ${new Set(foreignInjections.map((i) => i.file)).size} files, ${foreignInjections.length} injections |`,
    `| Largest server files | ${report.largestServerFiles.map((f) => `${code(path.relative('server/src', f.file))} ${f.lines}`).join(', ')} |`,
    `| Largest dashboard files | ${report.largestDashboardFiles.map((f) => `${code(path.relative('dashboard/src', f.file))} ${f.lines}`).join(', ')} |`,
    `| Source files over 400 lines / functions over 60 (issue 50's limits; declarative tables excepted: ${report.overLimits.tables.join(', ')}) | ${report.overLimits.files} / ${report.overLimits.functions} |`,
    `| Longest functions (lines) | ${report.longestFunctions.map((f) => `${code(f.name)} in ${code(path.basename(f.file))} ${f.lines}`).join(', ')} |`,
    `| Domain events (in process) / reactions to committed events (durable) | ${domainEvents.size} / ${reactions.length} |`,
    `| Test calls: raw \`send()\` / untyped on purpose / typed client | ${rawSend} / ${untypedOnPurpose} / ${typedClient} |`,
    `| Resource shapes in \`libs/contracts\`: the generated schema's (a DTO each) / written there | ${contractShapes.aliases} / ${contractShapes.written} |`,
  ].join('\n'),
};
function withGenerated(text) {
  let out = text;
  for (const [name, body] of Object.entries(generated)) {
    out = out.replace(
      new RegExp(`(<!-- generated:${name}\\b[^>]*-->\\n)[\\s\\S]*?(<!-- /generated:${name} -->)`),
      (_m, open, close) => `${open}${body}\n${close}`,
    );
  }
  return out;
}
if (process.argv.includes('--write')) {
  fs.writeFileSync(ARCHITECTURE_DOC, withGenerated(fs.readFileSync(ARCHITECTURE_DOC, 'utf8')));
  process.stdout.write(
    'docs/architecture.md: the events and reactions tables and the figures written from the source\n',
  );
  process.exit(0);
}

// `--check` (part of `npm test`): fails on any import cycle between features (a mutual import is
// the smallest), so the layering in docs/architecture.md stays true.
if (process.argv.includes('--check')) {
  let failed = false;
  if (cycles.length > 0) {
    process.stderr.write(
      `${cycles.map((g) => `feature import cycle: ${g.join(', ')}`).join('\n')}\nFeatures must import one way (see docs/architecture.md#layers): move the shared piece down or react through a domain event.\n`,
    );
    failed = true;
  }
  const doc = fs.readFileSync(ARCHITECTURE_DOC, 'utf8');
  if (withGenerated(doc) !== doc) {
    process.stderr.write(
      'docs/architecture.md no longer matches the code (its events table or figures): run `npm run architecture -- --write`\n',
    );
    failed = true;
  }
  const fileCycles = require('./file-cycles').cycles();
  if (fileCycles.length > 0) {
    process.stderr.write(
      `${fileCycles.map((g) => `file import cycle: ${g.join(' ↔ ')}`).join('\n')}\nMove what both need (a type, a constant) into a file of its own that neither imports back.\n`,
    );
    failed = true;
  }
  const unresolved = require('./doc-references').check();
  if (unresolved.length > 0) {
    process.stderr.write(`${unresolved.join('\n')}\n${unresolved.length} document reference(s) do not resolve\n`);
    failed = true;
  }
  if (failed) process.exit(1);
  process.stdout.write('No feature or file import cycle; every document reference resolves\n');
} else if (process.argv.includes('--json')) {
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} else {
  process.stdout.write(
    `Feature import cycles: ${cycles.length}${cycles.map((g) => `\n  ${g.length} features: ${g.join(', ')}`).join('')}\n`,
  );
  process.stdout.write(`Mutual imports: ${mutualPairs.length} (${mutualPairs.join(', ')})\n`);
  process.stdout.write(
    `Feature→feature imports (folder pairs): ${[...edges.values()].reduce((n, to) => n + to.size, 0)}\n`,
  );
  process.stdout.write(
    `File import cycles: ${report.fileCycles.length}${report.fileCycles.map((g) => `\n  ${g.join(' ↔ ')}`).join('')}\n`,
  );
  process.stdout.write(
    `Services injecting another feature's repository: ${new Set(foreignInjections.map((i) => i.file)).size} files, ${foreignInjections.length} injections\n`,
  );
  process.stdout.write(
    `Largest server files: ${report.largestServerFiles.map((f) => `${f.file} (${f.lines})`).join(', ')}\n`,
  );
  process.stdout.write(
    `Longest functions: ${report.longestFunctions.map((f) => `${f.name} in ${f.file} (${f.lines})`).join(', ')}\n`,
  );
  process.stdout.write(
    `Largest dashboard files: ${report.largestDashboardFiles.map((f) => `${f.file} (${f.lines})`).join(', ')}\n`,
  );
  process.stdout.write(
    `Tests: ${rawSend} raw send() calls, ${untypedOnPurpose} untyped on purpose (sendUntyped/sendRaw), ${typedClient} typed client calls\n`,
  );
  process.stdout.write(`Domain events: ${domainEvents.size}\n`);
  for (const [name, e] of Object.entries(report.domainEvents)) {
    process.stdout.write(
      `  ${name} (${e.delivery ?? 'undeclared'}; ${e.declaredIn ?? '?'})\n    emitted by ${e.emitters.join(', ') || 'nobody'}\n    handled by ${e.handlers.join(', ') || 'nobody'}\n`,
    );
  }
}
