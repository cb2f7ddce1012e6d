import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';

import type { Page } from 'playwright-core';

import { ok } from './support/api';
import { type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { createRequirement, initRepository, settled, sh, startRun, WORKTREE_AGENT } from './support/git-repo';
import { startInProcess } from './support/in-process';
import { ROOT, Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { until } from './support/wait';

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');

jest.setTimeout(120_000);

/**
 * Issue 45 in Chromium: what a Requirement's runs were refused shows on its page ("127.0.0.1:port
 * ×2"), live as it happens, with the two ways to open it; what the person allows is what the
 * next run reaches.
 */
describe('dashboard: blocked hosts on a Requirement, in Chromium', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let browser: BrowserSession;
  let page: Page;
  let outside: http.Server;
  let port = 0;
  const hits: string[] = [];
  let id = '';

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    outside = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      res.end('outside-answered');
    });
    await new Promise<void>((resolve) => outside.listen(0, '127.0.0.1', resolve));
    port = (outside.address() as AddressInfo).port;
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n' });
    manager = await startInProcess({
      env: {
        CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
        CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
        GH_TOKEN: '',
        GITHUB_TOKEN: '',
      },
      sandbox,
    });
    id = (await createRequirement(manager, { title: 'Fetch something' })).id;
    await startRun(manager, id, sh(`curl -s http://127.0.0.1:${port}/one; curl -s http://127.0.0.1:${port}/two; true`));
    await settled(manager, id, 1);
    browser = await launchBrowser();
    page = browser.page;
    await page.goto(`${manager.origin}/?token=${manager.token}`);
    await page.waitForURL(`${manager.origin}/requirements`);
  });

  afterAll(async () => {
    await browser?.close();
    await manager?.stop();
    sandbox?.cleanup();
    await new Promise((resolve) => outside?.close(resolve));
  });

  it('lists the refused host with its count, and allowing it for the Requirement opens it for the next run', async () => {
    expect(hits).toEqual([]);
    await page.goto(`${manager.origin}/requirements/${id}`);
    const row = page.locator(`[data-testid="blocked-host"][data-entry="127.0.0.1:${port}"]`);
    await row.waitFor();
    await expect(row.innerText()).resolves.toContain(`127.0.0.1:${port} ×2`);
    await expect(row.innerText()).resolves.toContain('is not on the allow-list');
    await screenshot(page, 'network-blocked');

    await row.getByTestId('allow-here').click();
    await page.locator(`[data-testid="network-allowed"] [data-entry="127.0.0.1:${port}"]`).waitFor();
    await row.getByText('allowed').waitFor();
    const network = await ok(manager.api.GET('/api/requirements/{id}/network', { params: { path: { id } } }));
    expect(network.allow).toEqual([`127.0.0.1:${port}`]);

    await startRun(manager, id, sh(`curl -s http://127.0.0.1:${port}/three; true`));
    await settled(manager, id, 2);
    expect(hits).toEqual(['/three']);
  });

  it('shows a refusal live, without a reload, and allows it for the workspace', async () => {
    const other = http.createServer((_req, res) => res.end('other'));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const otherPort = (other.address() as AddressInfo).port;
    try {
      await startRun(manager, id, sh(`curl -s http://127.0.0.1:${otherPort}/live; true`));
      const row = page.locator(`[data-testid="blocked-host"][data-entry="127.0.0.1:${otherPort}"]`);
      await row.waitFor();
      await expect(row.innerText()).resolves.toContain(`127.0.0.1:${otherPort} ×1`);
      await settled(manager, id, 3);

      await row.getByTestId('allow-workspace').click();
      await until('the workspace allow-list to hold it', async () => {
        const { values } = await ok(manager.api.GET('/api/configuration'));
        return values.networkAllow.includes(`127.0.0.1:${otherPort}`);
      });
      await row.waitFor({ state: 'detached' });
    } finally {
      await new Promise((resolve) => other.close(resolve));
      await ok(manager.api.PATCH('/api/configuration', { body: { networkAllow: [] } }));
    }
  });
});
