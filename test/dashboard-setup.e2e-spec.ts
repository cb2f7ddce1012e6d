import * as fs from 'node:fs';
import * as path from 'node:path';

import { type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { send } from './support/http';
import { ManagerProcess, ROOT, Sandbox, makeSandbox, startManager } from './support/manager-process';

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');

jest.setTimeout(120_000);

/** Evaluated in the page (a string: the browser's globals are not this file's): resolves two frames later. */
const TWO_FRAMES = 'new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))';

/**
 * The setup panel on the Requirements board, in Chromium against a real manager: doctor's
 * findings (GET /api/doctor) on a first start and whenever an agent CLI is missing, each with
 * how to fix it; dismissed, it stays away until something else is found.
 */
describe('dashboard setup panel in Chromium', () => {
  const managers: Array<{ manager: ManagerProcess; sandbox: Sandbox }> = [];
  let browser: BrowserSession;

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    for (const { manager, sandbox } of managers) {
      await manager.stop();
      sandbox.cleanup();
    }
  });

  async function open(env: NodeJS.ProcessEnv = {}): Promise<ManagerProcess> {
    const sandbox = makeSandbox();
    const manager = await startManager({ env, sandbox });
    managers.push({ manager, sandbox });
    return manager;
  }

  it('shows what is missing with how to fix it, and stays dismissed across a reload', async () => {
    const manager = await open({ CODE_FACTORY_CODEX_EXECUTABLE: '/nonexistent/bin/codex' });
    const { page } = browser;
    await page.goto(`${manager.origin}/?token=${manager.token}`);
    await page.waitForURL(`${manager.origin}/requirements`);
    const panel = page.getByTestId('setup-panel');
    await panel.waitFor();
    // No Requirement yet: the welcome; the missing CLI marked, with its fix.
    await expect(panel.locator('h2').textContent()).resolves.toContain('Welcome');
    const codex = panel.locator('[data-check="codex"]');
    await expect(codex.getAttribute('data-status')).resolves.toBe('warn');
    await expect(codex.textContent()).resolves.toContain('/nonexistent/bin/codex');
    await expect(codex.locator('.fix').textContent()).resolves.toContain('codexExecutable');
    // What passed is folded away under a count.
    await expect(panel.locator('details.setup-passed summary').textContent()).resolves.toMatch(/^\d+ checks passed$/);
    await panel.locator('details.setup-passed summary').click();
    await expect(panel.locator('[data-check="claude"]').getAttribute('data-status')).resolves.toBe('ok');
    await expect(panel.locator('[data-check="port"]').textContent()).resolves.toContain(`serving on ${manager.origin}`);
    await screenshot(page, 'setup-panel');

    await page.getByTestId('setup-recheck').click();
    await page.getByTestId('setup-recheck').and(page.locator(':enabled')).waitFor();
    await page.getByTestId('setup-dismiss').click();
    await panel.waitFor({ state: 'detached' });
    const answered = page.waitForResponse((r) => r.url().startsWith(`${manager.origin}/api/doctor`));
    await page.reload();
    expect((await answered).status()).toBe(200);
    // The same findings stay dismissed: two frames after the answer, still no panel.
    await page.evaluate(TWO_FRAMES);
    await expect(panel.count()).resolves.toBe(0);
  });

  it('is not shown once work exists and both agent CLIs are there', async () => {
    const manager = await open();
    expect((await send(manager.origin, 'POST', '/api/requirements', { provider: 'codex', title: 'Existing work' })).status).toBe(201);
    const page = await browser.context.newPage();
    try {
      const doctor = page.waitForResponse((r) => r.url().startsWith(`${manager.origin}/api/doctor`));
      await page.goto(`${manager.origin}/?token=${manager.token}`);
      await page.waitForURL(`${manager.origin}/requirements`);
      expect((await doctor).status()).toBe(200);
      await page.getByText('Existing work').first().waitFor();
      await page.evaluate(TWO_FRAMES);
      await expect(page.getByTestId('setup-panel').count()).resolves.toBe(0);
    } finally {
      await page.close();
    }
  });
});
