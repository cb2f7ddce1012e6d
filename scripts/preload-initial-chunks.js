// After `ng build dashboard`: a <link rel="modulepreload"> in index.html for every script the entry
// point imports statically, at any depth. Angular writes at most ten (MODULE_PRELOAD_MAX in
// @angular/build); past that, a chunk the first paint needs (with @defer blocks splitting the
// bundle: the 200 KB framework chunk) is found only once main.js has downloaded and parsed, one
// more round trip before the app can start. Idempotent.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const browser = path.resolve(__dirname, '..', 'dist', 'dashboard', 'browser');
const indexPath = path.join(browser, 'index.html');

/** `import{a as b}from"./chunk-X.js"`, `import"./chunk-X.js"`, `export{…}from"./chunk-X.js"`; not `import("./…")`, which is lazy. */
const STATIC_IMPORT = /\b(?:from|import)\s*"\.\/([\w.-]+\.js)"/g;

function staticImports(file) {
  return [...fs.readFileSync(path.join(browser, file), 'utf8').matchAll(STATIC_IMPORT)].map((m) => m[1]);
}

const html = fs.readFileSync(indexPath, 'utf8');
const entries = [...html.matchAll(/<script src="\/([^"]+\.js)" type="module"><\/script>/g)].map((m) => m[1]);
if (entries.length === 0) {
  throw new Error(`no module script in ${indexPath}`);
}
const preloaded = new Set([...html.matchAll(/<link rel="modulepreload" href="\/([^"]+)">/g)].map((m) => m[1]));
const seen = new Set(entries);
const queue = [...entries];
const missing = [];
while (queue.length > 0) {
  for (const imported of staticImports(queue.shift())) {
    if (!seen.has(imported)) {
      seen.add(imported);
      queue.push(imported);
      if (!preloaded.has(imported)) {
        missing.push(imported);
      }
    }
  }
}
if (missing.length > 0) {
  const links = missing.map((file) => `<link rel="modulepreload" href="/${file}">`).join('');
  const at = html.indexOf(`<script src="/${entries[0]}"`);
  fs.writeFileSync(indexPath, html.slice(0, at) + links + html.slice(at));
}
process.stdout.write(`index.html: ${preloaded.size + missing.length} module preloads (${missing.length} added)\n`);
