import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Page } from 'playwright-core';

import { type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { startInProcess } from './support/in-process';
import { ROOT, Sandbox, type TestManager, makeSandbox } from './support/manager-process';

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');

jest.setTimeout(180_000);

/**
 * A browser without the login cookie (a bookmark, a new browser) against a real manager: it gets
 * a page that says how to log in, not empty boards under a toast per refused call; the login link
 * then opens the boards.
 */
describe('dashboard without the login cookie, in Chromium', () => {
  let sandbox: Sandbox;
  let manager: TestManager;

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    sandbox = makeSandbox();
    manager = await startInProcess({ sandbox });
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  /** Opens a bookmarked board without the cookie; resolves once the board's reads were all refused. */
  async function openBookmark(page: Page): Promise<void> {
    const refused = page.waitForResponse(
      (r) => r.url().startsWith(`${manager.origin}/api/requirements`) && r.status() === 401,
    );
    await page.goto(`${manager.origin}/requirements`);
    await refused;
    await page.getByTestId('logged-out').waitFor();
    // Every first read has had its answer: none of them left a toast behind.
    await page.waitForLoadState('networkidle');
  }

  for (const [colorScheme, width] of [
    ['light', 1280],
    ['dark', 1280],
    ['light', 390],
    ['dark', 390],
  ] as const) {
    it(`says how to log in instead of showing empty boards and 401 toasts (${colorScheme}, ${width} px)`, async () => {
      const browser: BrowserSession = await launchBrowser({ colorScheme, viewport: { height: 844, width } });
      try {
        const { page } = browser;
        await openBookmark(page);
        const panel = page.getByTestId('logged-out');
        await expect(panel.locator('h1').textContent()).resolves.toBe('Not logged in');
        const text = (await panel.textContent()) ?? '';
        expect(text).toContain('agent-manager token');
        expect(text).toContain('agent-manager start --detach');
        await expect(page.locator('.toast').count()).resolves.toBe(0);
        // The page fits the phone's width: nothing scrolls sideways but the command blocks.
        const overflow = await page.evaluate(
          'document.documentElement.scrollWidth - document.documentElement.clientWidth',
        );
        expect(overflow).toBe(0);
        // The boards below it are out of reach (inert) while logged out.
        await expect(page.locator('.shell').getAttribute('inert')).resolves.not.toBeNull();
        await screenshot(page, `logged-out-${colorScheme}-${width}`);

        // The login link logs the browser in: the boards, no logged-out page.
        await page.goto(`${manager.origin}/?token=${manager.token}`);
        await page.waitForURL(`${manager.origin}/requirements`);
        await page.getByTestId('new-requirement').waitFor();
        await expect(page.getByTestId('logged-out').count()).resolves.toBe(0);
        await expect(page.locator('.shell').getAttribute('inert')).resolves.toBeNull();
      } finally {
        await browser.close();
      }
    });
  }
});
