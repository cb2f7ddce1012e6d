import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { ROOT } from './support/manager-process';

// Both CLIs answer a person (`status`, `stop`, `--help`) and an agent (`code-factory-cli …`) many
// times a day: a command that needs no manager must not load one. Each command registers the
// server's modules only when it runs (the foreground start, `db copy`, `doctor`, `mcp`); this suite
// keeps it so, by the npm packages each process loaded (a fact, not a timing: the benchmark times).

const HOOK = path.join(ROOT, 'test', 'support', 'loaded-packages-hook.js');
const AGENT_MANAGER = path.join(ROOT, 'bin', 'agent-manager.js');
const CODE_FACTORY_CLI = path.join(ROOT, 'bin', 'code-factory-cli.js');
/** What the manager itself loads: the ORM and its drivers, HTTP, validation, OpenAPI, MCP, TLS. */
const SERVER_PACKAGES = [
  '@modelcontextprotocol/sdk',
  '@nestjs/platform-express',
  '@nestjs/swagger',
  '@nestjs/typeorm',
  'class-validator',
  'express',
  'node-forge',
  'pg',
  'sqlite3',
  'typeorm',
  'zod',
];

let base: string;
let home: string;
let workspace: string;

beforeAll(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'am-cli-startup-'));
  home = path.join(base, 'home');
  workspace = path.join(base, 'repo');
  fs.mkdirSync(workspace);
  spawnSync('git', ['init', '-q', workspace]);
});

afterAll(() => fs.rmSync(base, { force: true, recursive: true }));

/** Runs a CLI with the hook preloaded; returns its exit code, output and the packages it loaded. */
function run(bin: string, args: string[]): { code: number | null; output: string; packages: string[] } {
  const record = path.join(base, `loaded-${Math.random().toString(36).slice(2)}.json`);
  const result = spawnSync(process.execPath, ['-r', HOOK, bin, ...args], {
    cwd: workspace,
    encoding: 'utf8',
    env: { AM_LOADED_PACKAGES: record, CODE_FACTORY_HOME: home, HOME: home, PATH: process.env.PATH ?? '' },
    // stdin closed at once: `mcp` serves until its client hangs up.
    input: '',
    timeout: 30_000,
  });
  return {
    code: result.status,
    output: `${result.stdout}${result.stderr}`,
    packages: JSON.parse(fs.readFileSync(record, 'utf8')) as string[],
  };
}

const serverPackagesIn = (packages: string[]) => SERVER_PACKAGES.filter((name) => packages.includes(name));

describe('CLI start-up', () => {
  it.each([
    [['status'], /not running/],
    [['stop'], /is not running/],
    [['token'], /no token yet/],
    [['logs'], /has not run in the background/],
    [['--help'], /Usage: agent-manager/],
    [['start', '--help'], /--detach/],
    [['db', 'copy', '--help'], /--to/],
    [['doctor', '--help'], /--json/],
    [['mcp', '--help'], /MCP/],
  ])('agent-manager %j answers without loading the server', (args, expected) => {
    const { output, packages } = run(AGENT_MANAGER, args);
    expect(output).toMatch(expected);
    expect(serverPackagesIn(packages)).toEqual([]);
  });

  it.each([[['--help']], [['requirement', '--help']], [['pr', 'register', '--help']], [['timer', '--help']]])(
    'code-factory-cli %j answers without loading the server',
    (args) => {
      const { code, packages } = run(CODE_FACTORY_CLI, args);
      expect(code).toBe(0);
      expect(serverPackagesIn(packages)).toEqual([]);
    },
  );

  it('loads what a command needs when it runs: `mcp` serves with the MCP SDK', () => {
    // The control: the hook sees a package the command does load, so an empty list above means something.
    const { packages } = run(AGENT_MANAGER, ['mcp', '--workspace', workspace]);
    expect(serverPackagesIn(packages)).toContain('@modelcontextprotocol/sdk');
  });
});
