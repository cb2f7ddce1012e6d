import * as fs from 'node:fs';
import * as path from 'node:path';

import { type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { startInProcess } from './support/in-process';
import { ROOT, Sandbox, type TestManager, makeSandbox } from './support/manager-process';

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
  const managers: Array<{ manager: TestManager; sandbox: Sandbox }> = [];
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

  async function open(env: NodeJS.ProcessEnv = {}): Promise<TestManager> {
    const sandbox = makeSandbox();
    const manager = await startInProcess({ env, sandbox });
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
    // A configured path that does not exist is broken, not "not on the PATH", and the summary does
    // not claim that everything is here; one agent CLI is enough.
    await expect(codex.getAttribute('data-status')).resolves.toBe('fail');
    await expect(codex.textContent()).resolves.toContain('/nonexistent/bin/codex (codexExecutable) does not exist');
    await expect(codex.textContent()).resolves.not.toContain('not on the PATH');
    await expect(codex.locator('.fix').textContent()).resolves.toContain('codexExecutable');
    const summary = (await panel.getByTestId('setup-summary').textContent()) ?? '';
    expect(summary).not.toContain('Everything');
    expect(summary).toContain('Agent Manager can run, but not everything works');
    expect(summary).toContain('Codex or Claude Code, not both');
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

  for (const colorScheme of ['light', 'dark'] as const) {
    it(`shows a broken CLI path on a phone (${colorScheme}, 390 px), and is not raised for one CLI missing beside the other`, async () => {
      const broken = await open({ CODE_FACTORY_CODEX_EXECUTABLE: '/nonexistent/bin/codex' });
      expect(
        (await broken.api.POST('/api/requirements', { body: { provider: 'claude-code', title: 'Existing work' } }))
          .status,
      ).toBe(201);
      const phone = await launchBrowser({ colorScheme, viewport: { height: 844, width: 390 } });
      try {
        await phone.page.goto(`${broken.origin}/?token=${broken.token}`);
        const panel = phone.page.getByTestId('setup-panel');
        // Work exists, yet a broken configured path raises the panel.
        await panel.waitFor();
        await expect(panel.locator('[data-check="codex"]').getAttribute('data-status')).resolves.toBe('fail');
        const overflow = await phone.page.evaluate(
          'document.documentElement.scrollWidth - document.documentElement.clientWidth',
        );
        expect(overflow).toBe(0);
        await screenshot(phone.page, `setup-panel-broken-path-${colorScheme}-390`);
      } finally {
        await phone.close();
      }

      // Codex simply not installed (the default name, not on the PATH) while Claude Code works: no panel.
      const onlyClaude = await open({ CODE_FACTORY_CODEX_EXECUTABLE: 'codex-not-installed-here' });
      expect(
        (await onlyClaude.api.POST('/api/requirements', { body: { provider: 'claude-code', title: 'Existing work' } }))
          .status,
      ).toBe(201);
      const page = await browser.context.newPage();
      try {
        const doctor = page.waitForResponse((r) => r.url().startsWith(`${onlyClaude.origin}/api/doctor`));
        await page.goto(`${onlyClaude.origin}/?token=${onlyClaude.token}`);
        const report = (await (await doctor).json()) as {
          checks: Array<{ id: string; status: string; detail: string }>;
        };
        expect(report.checks.find((c) => c.id === 'codex')).toMatchObject({ status: 'warn' });
        expect(report.checks.find((c) => c.id === 'codex')?.detail).toContain('one agent CLI is enough');
        await page.getByText('Existing work').first().waitFor();
        await page.evaluate(TWO_FRAMES);
        await expect(page.getByTestId('setup-panel').count()).resolves.toBe(0);
      } finally {
        await page.close();
      }
    });
  }

  it('is not shown once work exists and both agent CLIs are there', async () => {
    const manager = await open();
    expect(
      (await manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'Existing work' } })).status,
    ).toBe(201);
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
