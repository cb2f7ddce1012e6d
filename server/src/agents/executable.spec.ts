import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { cliNotFoundMessage, findExecutable } from './executable';

describe(findExecutable.name, () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-exec-'));
    fs.mkdirSync(path.join(dir, 'a'));
    fs.mkdirSync(path.join(dir, 'b'));
    fs.writeFileSync(path.join(dir, 'a', 'codex'), 'not executable', { mode: 0o644 });
    fs.writeFileSync(path.join(dir, 'b', 'codex'), '#!/bin/sh\n', { mode: 0o755 });
    fs.mkdirSync(path.join(dir, 'b', 'claude')); // a directory is not a program
  });
  afterAll(() => fs.rmSync(dir, { force: true, recursive: true }));

  it('looks a name up on PATH as execvp does, skipping non-executables and directories', () => {
    const searchPath = [path.join(dir, 'a'), '', path.join(dir, 'b')].join(path.delimiter);
    expect(findExecutable('codex', searchPath, '/')).toBe(path.join(dir, 'b', 'codex'));
    expect(findExecutable('claude', searchPath, '/')).toBeNull();
    expect(findExecutable('codex', '', '/')).toBeNull();
  });

  it('takes a path with a slash as it is, relative to the working directory', () => {
    expect(findExecutable(path.join(dir, 'b', 'codex'), '', '/')).toBe(path.join(dir, 'b', 'codex'));
    expect(findExecutable('./b/codex', '', dir)).toBe(path.join(dir, 'b', 'codex'));
    expect(findExecutable('./a/codex', '', dir)).toBeNull();
    expect(findExecutable('/nonexistent/codex', process.env.PATH ?? '', dir)).toBeNull();
  });
});

describe(cliNotFoundMessage.name, () => {
  it('names the program, the install and the setting', () => {
    expect(cliNotFoundMessage('codex', 'codex')).toBe(
      'Codex CLI (`codex`) was not found on PATH. Install it (npm i -g @openai/codex) or set codexExecutable in the configuration.',
    );
    expect(cliNotFoundMessage('claude-code', '/opt/claude')).toBe(
      'Claude Code (`/opt/claude`) was not found (or is not executable). Install it (npm i -g @anthropic-ai/claude-code) or set claudeExecutable in the configuration.',
    );
  });
});
