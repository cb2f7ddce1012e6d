// The first process inside a terminal's pseudo-terminal (issue 48 §4), started by util-linux
// `script` in the Requirement's sandbox: it sizes the terminal, runs the shell on it, and resizes
// it when the manager asks on the control socket (one line "<rows> <cols>" per change). Setting
// the size on the terminal (`stty`, TIOCSWINSZ) sends SIGWINCH to whatever runs in front, as a
// terminal window's resize does (each line is answered `ok` once applied). It ends as the shell ends.
//
// Node built-ins only: it runs from dist/ inside the sandbox.
//
//   node terminal-shell.js <control socket> <rows> <cols> -- <shell> [args…]
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';

const SIZE_MAX = 1000;

function fail(message: string): never {
  process.stderr.write(`agent-manager terminal: ${message}\n`);
  process.exit(125);
}

function valid(rows: number, cols: number): boolean {
  return [rows, cols].every((n) => Number.isInteger(n) && n >= 1 && n <= SIZE_MAX);
}

/** The terminal on this process's stdin takes the size (the kernel tells the foreground of it). */
function resize(rows: number, cols: number): void {
  spawnSync('stty', ['rows', String(rows), 'cols', String(cols)], { stdio: ['inherit', 'ignore', 'ignore'] });
}

function main(): void {
  const argv = process.argv.slice(2);
  const separator = argv.indexOf('--');
  const [socketPath, rowsText, colsText] = argv.slice(0, separator);
  const command = argv.slice(separator + 1);
  const rows = Number(rowsText);
  const cols = Number(colsText);
  if (separator !== 3 || !socketPath || command.length === 0 || !valid(rows, cols)) {
    fail('usage: terminal-shell <control socket> <rows> <cols> -- <shell> [args…]');
  }
  resize(rows, cols);
  fs.rmSync(socketPath, { force: true });
  const control = net.createServer((client) => {
    let pending = '';
    client.setEncoding('latin1');
    client.on('data', (chunk: string) => {
      pending += chunk;
      if (pending.length > 4096) {
        client.destroy();
        return;
      }
      let end: number;
      while ((end = pending.indexOf('\n')) !== -1) {
        const [r, c] = pending.slice(0, end).split(' ').map(Number);
        pending = pending.slice(end + 1);
        if (valid(r, c)) {
          resize(r, c);
        }
        // Answered once applied: what is typed after the resize request sees the new size.
        client.write('ok\n');
      }
    });
    client.on('error', () => client.destroy());
  });
  control.listen(socketPath, () => control.unref());
  control.on('error', (err) => fail(`cannot listen on the control socket: ${err.message}`));
  const shell = spawn(command[0], command.slice(1), { stdio: 'inherit' });
  shell.once('error', (err) => fail(`cannot run ${command[0]}: ${err.message}`));
  shell.once('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
}

main();
