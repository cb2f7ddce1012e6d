import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { LocalTokenService } from '@server/auth/local-token.service';
import type { RunningManager } from '@server/manager';

import { apiClient, ok, refusal } from './support/api';
import { type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { createRequirement, initRepository, say, settled, startRun } from './support/git-repo';
import { Json, sendUntyped } from './support/http';
import { startWorktreeManager } from './support/in-process';
import { ROOT, Sandbox, makeSandbox } from './support/manager-process';
import { until } from './support/wait';

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');
const PHONE = { height: 844, width: 390 };

jest.setTimeout(120_000);

// The page's globals used in `evaluate` callbacks, typed just enough (the test compiles without the DOM library).
declare const document: { documentElement: { scrollWidth: number } };

/** What the stand-in editor was started with, each time: its working directory, then its arguments (whole entries only). */
function opened(log: string): string[][] {
  const entries: string[][] = [];
  let entry: string[] = [];
  for (const line of fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n') : []) {
    if (line === '---') {
      entries.push(entry);
      entry = [];
    } else if (line !== '') {
      entry.push(line);
    }
  }
  return entries;
}

/**
 * Issue 48 §1 and §5: every Requirement's page shows where it works — the working copy's path,
 * branch and base, ahead/behind, uncommitted work, its reserved ports, the layout — and opens it
 * in an editor found on PATH (here a stand-in `code` that records how it was started: the person's
 * VS Code is not on this machine), or gives a vscode:// link. A paired device is not at the
 * machine: 409 not_local. A real in-process server, a real SQLite file, the synthetic agent as a
 * real child process, Chromium.
 */
describe('the worktree strip and opening a working copy in an editor', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  let browser: BrowserSession;
  const pathBefore = process.env.PATH;
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'am-editors-'));
  const log = path.join(bin, 'opened.log');
  const api = () => apiClient(manager.url);
  let ran = '';

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    // Records its working directory, its arguments, and whether any of the manager's own variables reached it.
    fs.writeFileSync(
      path.join(bin, 'code'),
      `#!/bin/sh\n{ pwd; for a in "$@"; do echo "$a"; done; echo "private:$(env | grep -c '^CODE_FACTORY_')"; echo ---; } >> '${log}'\n`,
      { mode: 0o755 },
    );
    process.env.CODE_FACTORY_EDITOR_TEST_SECRET = 'not for editors';
    // The manager reads PATH as the person's shell gave it: the stand-in comes first.
    process.env.PATH = `${bin}${path.delimiter}${pathBefore ?? ''}`;
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n' });
    manager = await startWorktreeManager(sandbox);
    ran = (await createRequirement({ api: api() }, { title: 'Has a working copy' })).id;
    await startRun({ api: api() }, ran, say('Done.'));
    await settled({ api: api() }, ran, 1);
    browser = await launchBrowser();
  });

  afterAll(async () => {
    process.env.PATH = pathBefore;
    delete process.env.CODE_FACTORY_EDITOR_TEST_SECRET;
    await browser?.close();
    await manager?.stop();
    sandbox?.cleanup();
    fs.rmSync(bin, { force: true, recursive: true });
  });

  it('gives the working copy its ports on the API and opens it in an editor found on PATH', async () => {
    const requirement = await ok(api().GET('/api/requirements/{id}', { params: { path: { id: ran } } }));
    const worktree = requirement.worktree!;
    expect(worktree.ports).toEqual({ count: 10, first: expect.any(Number) });
    expect(worktree.ports!.first).toBeGreaterThanOrEqual(20_000);
    expect(worktree.ports!.first).toBeLessThan(32_000);
    expect(fs.existsSync(worktree.path!)).toBe(true);

    const editors = await ok(api().GET('/api/editors'));
    expect(editors.local).toBe(true);
    expect(editors.items).toContainEqual({ app: 'vscode', command: path.join(bin, 'code'), label: 'VS Code' });
    expect(editors.items.some((e) => e.app === 'zed')).toBe(false);

    const answer = await ok(
      api().POST('/api/requirements/{id}/open', { body: { app: 'vscode' }, params: { path: { id: ran } } }),
    );
    expect(answer).toMatchObject({ app: 'vscode', label: 'VS Code' });
    const [first] = await until('the editor started', async () => (opened(log).length > 0 ? opened(log) : undefined));
    // From the person's home (nothing in the folder is found as a command), on the folder, with
    // none of the manager's own variables.
    expect(first).toEqual([fs.realpathSync(os.homedir()), worktree.path, 'private:0']);
  });

  it('names what the agent left that an editor may run, and opens only when the person confirms', async () => {
    const requirement = await ok(api().GET('/api/requirements/{id}', { params: { path: { id: ran } } }));
    const folder = requirement.worktree!.path!;
    fs.mkdirSync(path.join(folder, '.vscode'));
    fs.writeFileSync(path.join(folder, '.vscode', 'tasks.json'), '{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}');
    execFileSync('git', ['config', 'core.fsmonitor', '/tmp/run-me'], { cwd: folder });
    try {
      const before = opened(log).length;
      const refused = await api().POST('/api/requirements/{id}/open', {
        body: { app: 'vscode' },
        params: { path: { id: ran } },
      });
      expect(refused.response.status).toBe(409);
      expect(refused.error).toMatchObject({
        code: 'worktree_untrusted',
        details: ['.vscode/tasks.json', 'git: core.fsmonitor'],
      });
      expect(opened(log)).toHaveLength(before);
      await ok(
        api().POST('/api/requirements/{id}/open', {
          body: { app: 'vscode', confirm: true },
          params: { path: { id: ran } },
        }),
      );
      await until('opened once confirmed', async () => (opened(log).length > before ? true : undefined));
    } finally {
      fs.rmSync(path.join(folder, '.vscode'), { force: true, recursive: true });
      execFileSync('git', ['config', '--unset', 'core.fsmonitor'], { cwd: folder });
    }
  });

  it('refuses an unknown app (naming the known ones), one not installed, a Requirement with no working copy, and a paired device', async () => {
    const unknown = await sendUntyped(manager.url, 'POST', `/api/requirements/${ran}/open`, { app: 'emacs' });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.json.message)).toContain('vscode, cursor, zed, idea, file_manager');
    await refusal(
      api().POST('/api/requirements/{id}/open', { body: { app: 'zed' }, params: { path: { id: ran } } }),
      409,
      'editor_not_found',
    );
    const unrun = await createRequirement({ api: api() }, { title: 'Never ran' });
    await refusal(
      api().POST('/api/requirements/{id}/open', { body: { app: 'vscode' }, params: { path: { id: unrun.id } } }),
      409,
      'no_worktree',
    );
    await refusal(
      api().POST('/api/requirements/{id}/open', { body: { app: 'vscode' }, params: { path: { id: 'req_nope' } } }),
      404,
    );

    const pairing = await ok(api().POST('/api/devices/pairings', { body: { name: 'Phone' } }));
    const paired = await fetch(pairing.url, { headers: { Origin: manager.url }, method: 'POST', redirect: 'manual' });
    const cookie = (paired.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    expect(cookie).toMatch(/^am_device_\d+=/);
    const fromPhone = await sendUntyped(
      manager.url,
      'POST',
      `/api/requirements/${ran}/open`,
      { app: 'vscode' },
      { Cookie: cookie, Origin: manager.url },
    );
    expect({ code: fromPhone.json.code, status: fromPhone.status }).toEqual({ code: 'not_local', status: 409 });
    const phoneEditors: Json = (await sendUntyped(manager.url, 'GET', '/api/editors', undefined, { Cookie: cookie }))
      .json;
    expect(phoneEditors).toEqual({ items: [], local: false });
  });

  it('shows the strip on the page, opens the editor from it, and fits a 390 px phone in the dark', async () => {
    const requirement = await ok(api().GET('/api/requirements/{id}', { params: { path: { id: ran } } }));
    const worktree = requirement.worktree!;
    const page = browser.page;
    await page.goto(`${manager.url}/?token=${manager.app.get(LocalTokenService).value}`);
    await page.goto(`${manager.url}/requirements/${ran}`);
    const strip = page.getByTestId('worktree-strip');
    await expect(strip.getByTestId('strip-path').textContent()).resolves.toBe(worktree.path);
    await expect(strip.getByTestId('strip-branch').textContent()).resolves.toContain(worktree.branch!);
    await expect(strip.getByTestId('strip-ports').getAttribute('data-first')).resolves.toBe(
      String(worktree.ports!.first),
    );
    await expect(strip.getByTestId('strip-ports').textContent()).resolves.toContain(
      `${worktree.ports!.first}–${worktree.ports!.first + 9}`,
    );
    await expect(strip.getByTestId('strip-layout').textContent()).resolves.toContain('own repository');
    await expect(strip.getByTestId('strip-vscode-link').getAttribute('href')).resolves.toBe(
      `vscode://file${worktree.path}`,
    );
    const before = opened(log).length;
    await strip.locator('[data-testid="strip-open"][data-app="vscode"]').click();
    await until('opened from the page', async () => (opened(log).length > before ? true : undefined));

    // Preview (issue 48 §2): started from the strip, its link and output shown as they come, stopped from it.
    const server = `require("http").createServer((q, s) => s.end("preview of " + process.cwd())).listen(Number(process.env.AGENT_MANAGER_PORT), "127.0.0.1", () => console.log("app listening"))`;
    expect((await api().PATCH('/api/configuration', { body: { runCommand: `exec node -e '${server}'` } })).status).toBe(
      200,
    );
    await strip.getByTestId('strip-preview-start').click();
    const link = strip.getByTestId('strip-preview-link');
    await link.waitFor();
    const url = await link.getAttribute('href');
    expect(url).toBe(`http://127.0.0.1:${worktree.ports!.first}`);
    expect(await (await fetch(url!)).text()).toBe(`preview of ${worktree.path}`);
    await expect(strip.getByTestId('strip-preview').getAttribute('data-state')).resolves.toBe('ready');
    await until('the output on the page', async () =>
      (await strip.getByTestId('strip-preview-output').textContent())?.includes('app listening') ? true : undefined,
    );

    // A terminal (issue 48 §4): a shell on the working copy, typed into, closed from the page.
    await strip.getByTestId('strip-terminal-open').click();
    const terminal = page.locator('am-terminal-panel');
    await until('the terminal to open', async () =>
      (await terminal.getByTestId('terminal-state').getAttribute('data-state')) === 'open' ? true : undefined,
    );
    await terminal.getByTestId('terminal-screen').click();
    await page.keyboard.type('echo "in $(pwd)"');
    await page.keyboard.press('Enter');
    await until('the shell to answer on the page', async () =>
      (await terminal.locator('.xterm-rows').textContent())?.includes(`in ${worktree.path}`) ? true : undefined,
    );
    await screenshot(page, 'worktree-terminal');
    const [open] = (await ok(api().GET('/api/requirements/{id}/terminals', { params: { path: { id: ran } } }))).items;
    expect(open).toMatchObject({ requirementId: ran });
    await terminal.getByTestId('terminal-close').click();
    await until('the terminal to close', async () =>
      (await ok(api().GET('/api/requirements/{id}/terminals', { params: { path: { id: ran } } }))).items.length === 0
        ? true
        : undefined,
    );
    await screenshot(page, 'worktree-strip');

    await page.setViewportSize(PHONE);
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.reload();
    // On a phone the details are one switch away from the conversation.
    await page.getByTestId('pane-details').click();
    await strip.getByTestId('strip-path').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await strip.getByTestId('strip-preview-link').waitFor();
    await screenshot(page, 'worktree-strip-390-dark');
    await strip.getByTestId('strip-preview-stop').click();
    await until('stopped from the page', async () =>
      (await strip.getByTestId('strip-preview').getAttribute('data-state')) === 'stopped' ? true : undefined,
    );
    await strip.getByTestId('strip-preview-start').waitFor();
    expect(browser.errors).toEqual([]);
  });
});
