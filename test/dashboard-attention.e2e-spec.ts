import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Page } from 'playwright-core';

import { ok } from './support/api';
import { type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { createRequirement, initRepository, say, settled, sh, startRun, WORKTREE_AGENT } from './support/git-repo';
import { startInProcess } from './support/in-process';
import { ROOT, Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { until } from './support/wait';

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');
const AGENTS = {
  CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
  CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
  GH_TOKEN: '',
  GITHUB_TOKEN: '',
};
const PHONE = { height: 844, width: 390 };

jest.setTimeout(180_000);

// The page's globals used in `evaluate` callbacks, typed just enough (the test compiles without the DOM library).
declare const document: {
  activeElement: {
    getAttribute(name: string): string | null;
    closest(s: string): { getAttribute(name: string): string | null } | null;
  } | null;
  documentElement: { scrollWidth: number };
  querySelector(s: string): { getAttribute(name: string): string | null } | null;
};

/**
 * Issue 47 §2 in Chromium, on a 390 px phone and with the keyboard only: Needs you lists why each
 * Requirement waits — a question, a failed run, a reached budget — and each is answered in the
 * list (a reply, a start, a raised budget, confirming it done) without leaving it; the count is in
 * the navigation, the tab's title and its icon.
 */
describe('Needs you in Chromium', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let browser: BrowserSession;
  let page: Page;
  const ids = { asks: '', budget: '', fails: '' };

  const list = () => page.getByTestId('attention-list');
  const row = (id: string, reason: string) =>
    list().locator(`li[data-requirement-id="${id}"][data-reason="${reason}"]`);
  const focusedRow = () =>
    page.evaluate(() => {
      const li = document.activeElement?.closest('li[data-reason]');
      return li ? `${li.getAttribute('data-requirement-id')}:${li.getAttribute('data-reason')}` : null;
    });
  const focusedTestId = () => page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? null);
  /** `j` (then `k` from the end) until the row of `id` and `reason` has the focus. */
  const focusOn = async (id: string, reason: string) => {
    await row(id, reason).waitFor();
    const want = `${id}:${reason}`;
    for (const key of ['j', 'k']) {
      for (let k = 0; k < 8 && (await focusedRow()) !== want; k++) {
        await page.keyboard.press(key);
      }
    }
    expect(await focusedRow()).toBe(want);
  };
  /** Tab from the focused row to the control `testId` inside it. */
  const tabTo = async (testId: string) => {
    for (let k = 0; k < 6 && (await focusedTestId()) !== testId; k++) {
      await page.keyboard.press('Tab');
    }
    expect(await focusedTestId()).toBe(testId);
  };
  const count = () => page.getByTestId('attention').getAttribute('data-count');

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n' });
    manager = await startInProcess({ env: AGENTS, sandbox });
    ids.asks = (await createRequirement(manager, { title: 'Asks a question' })).id;
    ids.fails = (await createRequirement(manager, { title: 'Fails until fixed' })).id;
    ids.budget = (await createRequirement(manager, { budget: { maxTokens: 5 }, title: 'Over budget' })).id;
    await startRun(manager, ids.asks, say('Which port should the server use?'));
    await startRun(manager, ids.fails, sh('test -f fixed.txt || exit 3'));
    await startRun(manager, ids.budget, say('Spent it all.'));
    await Promise.all(Object.values(ids).map((id) => settled(manager, id, 1)));
    browser = await launchBrowser();
    page = browser.page;
    await page.setViewportSize(PHONE);
    await page.goto(`${manager.origin}/?token=${manager.token}`);
    await page.waitForURL(`${manager.origin}/requirements`);
  });

  afterAll(async () => {
    await browser?.close();
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('comes up with g n, counts in the navigation, the title and the icon, and fits the phone', async () => {
    await until('three items counted', async () => ((await count()) === '3' ? true : undefined));
    await page.locator('body').press('g');
    await page.keyboard.press('n');
    await page.waitForURL(`${manager.origin}/attention`);
    await row(ids.asks, 'waiting_reply').getByText('Which port should the server use?').waitFor();
    await row(ids.fails, 'run_failed').waitFor();
    await row(ids.budget, 'budget_reached').waitFor();
    await expect(page.title()).resolves.toBe('(3) Needs you · Agent Manager');
    await expect(page.locator('link[rel="icon"]').getAttribute('data-count')).resolves.toBe('3');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await screenshot(page, 'needs-you-390');
  });

  it('answers the question in the list: r, the reply, Ctrl+Enter', async () => {
    await focusOn(ids.asks, 'waiting_reply');
    await page.keyboard.press('r');
    await until('the reply box focused', async () =>
      (await focusedTestId()) === 'attention-reply-text' ? true : undefined,
    );
    await page.keyboard.type(`Use 8080. ${say('Using 8080 now.')}`);
    await page.keyboard.press('Control+Enter');
    // The reply starts a run: the question is answered; the run's answer is then to confirm.
    await row(ids.asks, 'confirm_done').getByText('Using 8080 now.').waitFor({ timeout: 60_000 });
    await expect(row(ids.asks, 'waiting_reply').count()).resolves.toBe(0);
  });

  it('starts a failed one again and raises a reached budget, from the list', async () => {
    const failing = await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: ids.fails } } }));
    fs.writeFileSync(path.join(failing.worktree!.path!, 'fixed.txt'), 'now\n');
    await focusOn(ids.fails, 'run_failed');
    await tabTo('attention-start');
    await page.keyboard.press('Enter');
    // Its run now succeeds and leaves the file written for it: work to review.
    await row(ids.fails, 'review_ready').waitFor({ timeout: 60_000 });
    await expect(row(ids.fails, 'run_failed').count()).resolves.toBe(0);

    await focusOn(ids.budget, 'budget_reached');
    await tabTo('attention-budget');
    await expect(page.getByTestId('attention-budget').inputValue()).resolves.toBe('10000');
    await tabTo('attention-raise');
    await page.keyboard.press('Enter');
    await row(ids.budget, 'confirm_done').waitFor();
    await expect(row(ids.budget, 'budget_reached').count()).resolves.toBe(0);
    const raised = await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: ids.budget } } }));
    expect(raised.budget).toEqual({ maxCostUsd: null, maxTokens: 10_000 });
  });

  it('confirms each done with the keyboard until nothing needs the person, then Enter opens a card', async () => {
    for (const [id, reason] of [
      [ids.asks, 'confirm_done'],
      [ids.fails, 'review_ready'],
      [ids.budget, 'confirm_done'],
    ]) {
      await focusOn(id, reason);
      await tabTo('attention-confirm');
      await page.keyboard.press('Enter');
      await until(`${id} confirmed`, async () => ((await row(id, reason).count()) === 0 ? true : undefined));
    }
    await list().getByText('Nothing needs you.').waitFor();
    await until('the count at 0', async () => ((await count()) === '0' ? true : undefined));
    await expect(page.title()).resolves.toBe('Needs you · Agent Manager');
    await expect(page.locator('link[rel="icon"]').getAttribute('data-count')).resolves.toBe('0');

    // A new question comes in live; Enter on its row opens its card.
    const late = await createRequirement(manager, { title: 'Asks late' });
    await startRun(manager, late.id, say('One more thing?'));
    await focusOn(late.id, 'waiting_reply');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${manager.origin}/requirements/${late.id}`);
  });
});
