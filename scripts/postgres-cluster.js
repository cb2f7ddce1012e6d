#!/usr/bin/env node
// A throwaway PostgreSQL cluster for the tests and benchmarks: initdb in a temporary directory,
// listening on 127.0.0.1 on a free port (and a socket in that directory), never a system service.
// `start` prints `postgres://…` on stdout and `stop <dir>` ends it and removes the directory.
// As root, the server runs as the `postgres` user (initdb refuses root).
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

/** initdb and pg_ctl: on PATH, or Debian's /usr/lib/postgresql/<version>/bin (newest first). */
function binDir() {
  const debian = fs.existsSync('/usr/lib/postgresql')
    ? fs
        .readdirSync('/usr/lib/postgresql')
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => `/usr/lib/postgresql/${v}/bin`)
    : [];
  const onPath = (process.env.PATH ?? '').split(path.delimiter);
  const dir = [...onPath, ...debian].find(
    (d) => d && fs.existsSync(path.join(d, 'initdb')) && fs.existsSync(path.join(d, 'pg_ctl')),
  );
  if (!dir) {
    throw new Error('PostgreSQL is not installed (no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin)');
  }
  return dir;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Runs a PostgreSQL program, as `postgres` when this process is root. */
function run(program, args) {
  const asRoot = process.getuid?.() === 0;
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, args];
  const result = spawnSync(cmd, argv, { encoding: 'utf8' });
  if (result.status !== 0) {
    throw new Error(`${path.basename(program)} failed: ${result.stderr || result.stdout}`);
  }
}

async function start() {
  const bin = binDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-pg-'));
  if (process.getuid?.() === 0) {
    execFileSync('chown', ['postgres', dir]);
  }
  const data = path.join(dir, 'data');
  // C collation: text sorts by bytes, as SQLite compares it (keyset cursors on ids and times).
  run(path.join(bin, 'initdb'), ['-D', data, '-U', 'am', '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync']);
  const port = await freePort();
  const settings = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=64MB`;
  run(path.join(bin, 'pg_ctl'), [
    '-D',
    data,
    '-l',
    path.join(dir, 'server.log'),
    '-o',
    settings,
    '-w',
    '-t',
    '60',
    'start',
  ]);
  fs.writeFileSync(path.join(dir, 'url'), `postgres://am@127.0.0.1:${port}/postgres`);
  return { dir, url: `postgres://am@127.0.0.1:${port}/postgres` };
}

function stop(dir) {
  try {
    run(path.join(binDir(), 'pg_ctl'), ['-D', path.join(dir, 'data'), '-m', 'immediate', '-w', 'stop']);
  } finally {
    fs.rmSync(dir, { force: true, recursive: true });
  }
}

/** Whether a throwaway cluster can be started here (PostgreSQL's server programs are installed). */
function available() {
  try {
    binDir();
    return true;
  } catch {
    return false;
  }
}

module.exports = { available, start, stop };

if (require.main === module) {
  const [command, dir] = process.argv.slice(2);
  if (command === 'start') {
    start().then(
      ({ dir: d, url }) => process.stdout.write(`${url} ${d}\n`),
      (err) => {
        process.stderr.write(`${err.message}\n`);
        process.exit(1);
      },
    );
  } else if (command === 'stop' && dir) {
    stop(dir);
  } else {
    process.stderr.write('usage: postgres-cluster.js start | stop <dir>\n');
    process.exit(2);
  }
}
