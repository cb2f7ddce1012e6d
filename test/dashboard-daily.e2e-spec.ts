import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Locator, Page } from 'playwright-core';

import { ARTIFACTS, type BrowserSession, launchBrowser, screenshot, settledBox } from './support/browser';
import { FakeGitHubServer } from './support/fake-github-server';
import { ok } from './support/api';
import { ManagerProcess, ROOT, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { ModelStub, codexEnvironment } from './support/model-stub';
import { until } from './support/wait';

// Issue 16 in Debian's Chromium against the real built server and the real Codex CLI driven by the
// model stub: each defect and feature is exercised through the page, at 1280×800 and at a
// 390×844 phone viewport, and leaves screenshots in test-artifacts/dashboard-daily/ (looked at
// by a person; the assertions are what the screenshots show, measured).

const CODEX = path.join(ROOT, 'test', 'agent-clis', 'node_modules', '.bin', 'codex');
const LONG_JOB = `node -e "setInterval(() => {}, 1000)" am-daily-sleeper`;
const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');
const DESKTOP = { height: 800, width: 1280 };
const PHONE = { height: 844, width: 390 };
const GITHUB_TOKEN = 'ghp_daily_test';

jest.setTimeout(240_000);

// The page's globals used in `page.evaluate` callbacks, typed just enough (the test compiles without the DOM library).
interface Box {
  top: number;
  bottom: number;
  left: number;
  right: number;
  height: number;
}
interface El {
  getBoundingClientRect(): Box;
  scrollHeight: number;
  clientHeight: number;
  scrollWidth: number;
  clientWidth: number;
  id: string;
  parentElement: El | null;
  className: string;
}
declare const document: {
  documentElement: El & { dataset: Record<string, string | undefined> };
  activeElement: El | null;
  title: string;
  querySelector(s: string): El | null;
};
declare const localStorage: { setItem(key: string, value: string): void };
declare function getComputedStyle(element: El): {
  color: string;
  backgroundColor: string;
  outlineStyle: string;
  display: string;
};

/** WCAG contrast ratio of two `rgb(…)`/`rgba(…)` colours. */
function contrast(a: string, b: string): number {
  const lum = (c: string) => {
    const [r, g, bl] = (c.match(/[\d.]+/g) ?? []).slice(0, 3).map((v) => {
      const s = Number(v) / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * (r ?? 0) + 0.7152 * (g ?? 0) + 0.0722 * (bl ?? 0);
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

describe('dashboard for daily use (issue 16) in Chromium', () => {
  let sandbox: Sandbox;
  let stub: ModelStub;
  let github: FakeGitHubServer;
  let manager: ManagerProcess;
  let browser: BrowserSession;
  let page: Page;

  const shot = (name: string) => screenshot(page, path.join('..', 'dashboard-daily', name));
  const detail = () => page.getByTestId('requirement-detail');
  const messages = () => page.getByTestId('messages');
  const status = () => page.getByTestId('detail-status');
  const inViewport = async (locator: Locator, viewport: { width: number; height: number }) => {
    const box = await locator.boundingBox();
    return (
      !!box &&
      box.x >= 0 &&
      box.y >= 0 &&
      box.x + box.width <= viewport.width + 0.5 &&
      box.y + box.height <= viewport.height + 0.5
    );
  };
  const horizontalOverflow = () =>
    page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  const open = async (id: string) => {
    await page.goto(`${manager.origin}/requirements/${id}`);
    await detail()
      .and(page.locator(`[data-requirement-id="${id}"]`))
      .waitFor();
  };
  const create = async (title: string, description = 'Report the durations.') =>
    await ok(manager.api.POST('/api/requirements', { body: { description, provider: 'codex', title } }));

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    fs.rmSync(path.join(ARTIFACTS, '..', 'dashboard-daily'), { force: true, recursive: true });
    sandbox = makeSandbox();
    stub = await ModelStub.start();
    github = await FakeGitHubServer.start({ token: GITHUB_TOKEN });
    const agentEnv = codexEnvironment(stub, fs.mkdtempSync(path.join('/var/tmp', 'am-daily-codex-')));
    manager = await startManager({
      env: {
        ...agentEnv,
        CODE_FACTORY_CODEX_EXECUTABLE: CODEX,
        CODE_FACTORY_GITHUB_API_URL: github.url,
        CODE_FACTORY_PULL_REQUEST_RECONCILE_INTERVAL_SECONDS: '1',
        GH_TOKEN: '',
        GITHUB_TOKEN,
      },
      sandbox,
    });
    browser = await launchBrowser({ viewport: DESKTOP });
    page = browser.page;
    await page.goto(`${manager.origin}/?token=${manager.token}`);
    await page.waitForURL(`${manager.origin}/requirements`);
    await page.getByTestId('connection').and(page.locator('.live')).waitFor();
  });

  afterAll(async () => {
    await browser?.close();
    await manager?.stop();
    await github?.close();
    await stub?.close();
    sandbox?.cleanup();
  });

  it('keeps a 200-character title without spaces inside the page, and refuses a longer one with a counter and a message', async () => {
    const long = await create('W'.repeat(200));
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      await open(long.id);
      expect(await horizontalOverflow()).toBeLessThanOrEqual(0);
      expect(await inViewport(page.getByTestId('start'), viewport)).toBe(true);
      if (viewport === PHONE) {
        // A phone keeps Delete (and Edit, Fork) behind ⋯, so the actions stay one row (issue 26).
        await page.getByTestId('more-actions').click();
      }
      expect(await inViewport(page.getByTestId('delete'), viewport)).toBe(true);
      await shot(`long-title-${viewport.width}`);
    }
    await page.setViewportSize(DESKTOP);
    await page.getByTestId('new-requirement').click();
    await page.getByTestId('create-title').fill('x'.repeat(300));
    await page.getByTestId('title-counter').getByText('300/200').waitFor();
    await page.getByTestId('title-error').getByText('At most 200 characters (300 now)').waitFor();
    await expect(page.getByTestId('create-submit').isDisabled()).resolves.toBe(true);
    // Nothing cut: what was typed is still there.
    await expect(page.getByTestId('create-title').inputValue()).resolves.toHaveLength(300);
    await shot('create-title-too-long');
  });

  it('asks before Escape throws a typed draft away', async () => {
    const dialog = page.getByTestId('create-dialog');
    page.once('dialog', (d) => void d.dismiss());
    await page.keyboard.press('Escape');
    await expect(dialog.isVisible()).resolves.toBe(true);
    await expect(page.getByTestId('create-title').inputValue()).resolves.toHaveLength(300);
    page.once('dialog', (d) => void d.accept());
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    // An untouched dialog closes without asking.
    await page.getByTestId('new-requirement').click();
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
  });

  it('offers a skip link as the first stop, which moves focus to the content', async () => {
    await page.goto(`${manager.origin}/requirements`);
    await page.getByTestId('requirements-board').waitFor();
    await page.keyboard.press('Tab');
    await expect(page.evaluate(() => document.activeElement?.className)).resolves.toContain('skip-link');
    await expect(page.getByTestId('skip-link').isVisible()).resolves.toBe(true);
    await shot('skip-link');
    await page.keyboard.press('Enter');
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('main');
  });

  let worked = '';

  it('shows that the agent works and its latest step live, then the answer; the trace is readable', async () => {
    worked = (await create('Add tiered timings')).id;
    stub.scriptFor(worked, [
      { shell: 'echo daily-tool-output' },
      { shell: LONG_JOB },
      { text: 'Timings are in place.' },
    ]);
    await open(worked);
    await page.getByTestId('composer-text').fill(`Go ahead ${worked}`);
    await page.getByTestId('start').click();
    const activity = page.getByTestId('activity');
    await activity.waitFor({ timeout: 60_000 });
    await activity.getByText(/The agent is working · \d+:\d\d/).waitFor();
    // The long tool job is the latest step while it runs: named, with its own elapsed time.
    await activity
      .getByTestId('activity-step')
      .getByText(/Running .*am-daily-sleeper.* · \d+:\d\d/)
      .waitFor({ timeout: 90_000 });
    // The header keeps to one row at 1280 px (the usage and Needs-you additions included).
    expect((await settledBox(page.locator('.topbar'))).height).toBeLessThanOrEqual(56);
    await shot('activity-1280');
    await page.setViewportSize(PHONE);
    await expect(inViewport(activity, PHONE)).resolves.toBe(true);
    await expect(inViewport(page.getByTestId('composer-send'), PHONE)).resolves.toBe(true);
    await shot('activity-390');
    await page.setViewportSize(DESKTOP);

    // A reply queues; steering hands it over and the next run answers.
    await page.getByTestId('composer-text').fill(`Also flush timings ${worked}`);
    await page.getByTestId('composer-send').click();
    await page.locator('[data-testid="steer"]:not([disabled])').click();
    await messages().getByText('Timings are in place.').waitFor({ timeout: 90_000 });
    await status().and(page.locator('[data-status="waiting_confirmation"]')).waitFor();
    await activity.waitFor({ state: 'detached' });
  });

  it('offers no Start when there is nothing new to deliver, and says what to do instead', async () => {
    await expect(page.getByTestId('start').count()).resolves.toBe(0);
    await page.getByTestId('nothing-to-start').getByText('Nothing new to deliver').waitFor();
    // A confirmation that waits is the obvious next step here (not failed, not paused).
    await expect(page.getByTestId('confirm').getAttribute('class')).resolves.toContain('primary');
    await shot('nothing-to-start');
  });

  it('keeps the selected Trace tab count readable in light and dark, and the trace translated, timed and newest first', async () => {
    await page.getByTestId('tab-trace').click();
    const ratio = async () => {
      const colors = await page.getByTestId('trace-count').evaluate((el) => {
        const e = el as unknown as El;
        const own = getComputedStyle(e);
        // The badge is transparent on a selected tab: its backdrop is the tab's own background.
        let back: El | null = e;
        let bg = own.backgroundColor;
        while (back && /rgba\(.*, 0\)|transparent/.test(bg)) {
          back = back.parentElement;
          bg = back ? getComputedStyle(back).backgroundColor : 'rgb(255, 255, 255)';
        }
        return { bg, fg: own.color };
      });
      return contrast(colors.fg, colors.bg);
    };
    const light = await ratio();
    expect(light).toBeGreaterThanOrEqual(4.5);
    const trace = page.getByTestId('trace');
    // Newest run first, each named by its number, start and outcome (the id only as a tooltip).
    const runs = trace.getByTestId('trace-run');
    await expect(runs.first().innerText()).resolves.toMatch(/^Run 2 · .* · succeeded$/);
    await expect(runs.nth(1).innerText()).resolves.toMatch(/^Run 1 · .* · cancelled$/);
    // Kinds in words, a time on every step, a tool's duration, the assistant's text in the open.
    await expect(trace.locator('[data-kind="tool_call"] .badge').first().textContent()).resolves.toBe('Tool');
    await expect(trace.locator('.trace-item time').count()).resolves.toBeGreaterThan(2);
    await trace
      .getByTestId('tool-duration')
      .first()
      .getByText(/took \d+ s/)
      .waitFor();
    await trace.getByTestId('assistant-text').getByText('Timings are in place.').waitFor();
    await shot('trace-light');

    await page.evaluate(() => localStorage.setItem('am.theme', 'dark'));
    await page.reload();
    await page.getByTestId('tab-trace').click();
    await expect(page.evaluate(() => document.documentElement.dataset['theme'])).resolves.toBe('dark');
    const dark = await ratio();
    expect(dark).toBeGreaterThanOrEqual(4.5);
    await shot('trace-dark');
    await page.evaluate(() => localStorage.setItem('am.theme', 'light'));
    await page.reload();
    await detail().waitFor();
    process.stdout.write(`trace count contrast: light ${light.toFixed(2)}:1, dark ${dark.toFixed(2)}:1\n`);
  });

  it('shows usage per Requirement and for the workspace today and this week', async () => {
    await page.getByTestId('tab-overview').click();
    const runs = (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: worked } } }))).items;
    const input = runs.reduce((n, r) => n + (r.inputTokens ?? 0), 0);
    expect(input).toBeGreaterThan(0);
    await page
      .getByTestId('requirement-usage')
      .getByText(`${input.toLocaleString('en-GB')} in`, { exact: false })
      .waitFor();
    await shot('usage');
    // The workspace's totals sit with the boards.
    await page.getByRole('link', { name: /Back to boards/ }).click();
    await page
      .getByTestId('usage-workspace')
      .getByText(/^Today .+ tokens · week .+ tokens$/)
      .waitFor();
    await shot('usage-workspace');
  });

  it('counts what waits for a person in the header and the tab title, and lists it in one place', async () => {
    const attention = page.getByTestId('attention');
    await attention.and(page.locator('[data-count="1"]')).waitFor();
    await expect(page.title()).resolves.toBe('(1) Requirements · Agent Manager');
    await attention.click();
    const list = page.getByTestId('attention-list');
    await list.locator(`li[data-requirement-id="${worked}"][data-reason="confirm_done"]`).waitFor();
    await expect(page.title()).resolves.toBe('(1) Needs you · Agent Manager');
    await shot('attention');
  });

  let failed = '';

  it('makes a failed run unmistakable on the card, the page and the attention list, with Retry', async () => {
    expect((await manager.api.PATCH('/api/configuration', { body: { codexExecutable: 'codex-missing' } })).status).toBe(
      200,
    );
    try {
      failed = (await create('Fails to start')).id;
      await open(failed);
      await page.getByTestId('composer-text').fill('Go');
      await page.getByTestId('start').click();
      const banner = page.getByTestId('failure-banner');
      await banner
        .getByText(/^The last run failed: .*Codex CLI \(`codex-missing`\) was not found/)
        .waitFor({ timeout: 30_000 });
      await banner.getByText('1 message was not consumed; Retry delivers it again.').waitFor();
      await page.getByTestId('start').getByText('Retry').waitFor();
      await expect(page.getByTestId('start').getAttribute('class')).resolves.toContain('primary');
      expect((await page.getByTestId('confirm').getAttribute('class')) ?? '').not.toContain('primary');
      await expect(page.getByTestId('session-state').getAttribute('class')).resolves.toContain('danger');
      await shot('failed-detail-1280');
      await page.setViewportSize(PHONE);
      await expect(inViewport(page.getByTestId('start'), PHONE)).resolves.toBe(true);
      await shot('failed-detail-390');
      await page.setViewportSize(DESKTOP);

      await page.getByRole('link', { name: /Back to boards/ }).click();
      const card = page.locator(`a.card[data-requirement-id="${failed}"]`);
      await card.getByTestId('session-badge').and(page.locator('.danger')).getByText('Run failed').waitFor();
      await card
        .getByTestId('card-error')
        .getByText(/codex-missing/)
        .waitFor();
      await shot('failed-card');
      await page.getByTestId('attention').and(page.locator('[data-count="2"]')).click();
      await page
        .getByTestId('attention-list')
        .locator(`li[data-requirement-id="${failed}"][data-reason="run_failed"]`)
        .waitFor();
    } finally {
      await manager.api.PATCH('/api/configuration', { body: { codexExecutable: CODEX } });
    }
  });

  it('edits a todo Requirement, forks one, and cancels a started one from the page', async () => {
    const todo = await create('Edit me');
    await open(todo.id);
    const before = await page.getByTestId('messages').boundingBox();
    await page.getByTestId('edit').click();
    await page.getByTestId('create-title').fill('Edited title');
    // The open dialog leaves the page behind it as it was.
    expect(await page.getByTestId('messages').boundingBox()).toEqual(before);
    await page.getByTestId('create-effort').selectOption('high');
    await shot('edit-dialog');
    await page.getByTestId('create-submit').click();
    await page.getByTestId('detail-title').getByText('Edited title').waitFor();
    expect(await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: todo.id } } }))).toMatchObject({
      reasoningEffort: 'high',
      title: 'Edited title',
    });

    // A started one: only the model and effort can change.
    await open(worked);
    await page.getByTestId('edit').click();
    await page.getByTestId('edit-started-note').waitFor();
    await expect(page.getByTestId('create-title').isDisabled()).resolves.toBe(true);
    await page.keyboard.press('Escape');

    await page.getByTestId('fork').click();
    await page.getByTestId('create-title').fill('Add tiered timings, again');
    await page.getByTestId('create-submit').click();
    await page.waitForURL((url) => !url.pathname.endsWith(worked));
    await page.getByTestId('forked-from').getByText('Add tiered timings').waitFor();
    await status().and(page.locator('[data-status="todo"]')).waitFor();

    await open(failed);
    page.once('dialog', (d) => void d.accept());
    await page.getByTestId('cancel-requirement').click();
    await status().and(page.locator('[data-status="cancelled"]')).waitFor();
    expect((await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: failed } } }))).status).toBe(
      'cancelled',
    );
  });

  it('names the settings with units and help (also in Chinese), keeps Save in view and marks an invalid field', async () => {
    await page.getByTestId('settings').click();
    const dialog = page.getByTestId('settings-dialog');
    const field = dialog.locator('[data-field="pullRequestReconcileIntervalSeconds"]');
    await field.getByText('Pull request refresh interval').waitFor();
    await field.getByText('s', { exact: true }).waitFor();
    await field.getByText(/Seconds between GitHub checks/).waitFor();
    await expect(inViewport(page.getByTestId('settings-save'), DESKTOP)).resolves.toBe(true);
    await dialog.locator('#cfg-pullRequestReconcileIntervalSeconds').fill('-5');
    await page.getByTestId('settings-save').click();
    await field.getByTestId('field-error').waitFor();
    await expect(dialog.locator('#cfg-pullRequestReconcileIntervalSeconds').getAttribute('aria-invalid')).resolves.toBe(
      'true',
    );
    await expect(page.locator('.toast.error').count()).resolves.toBe(0);
    expect((await ok(manager.api.GET('/api/configuration'))).values.pullRequestReconcileIntervalSeconds).toBe(60);
    await shot('settings-invalid');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });

    await page.getByTestId('language').selectOption('zh-CN');
    await page.getByTestId('settings').click();
    await dialog.locator('[data-field="pullRequestReconcileIntervalSeconds"]').getByText('拉取请求刷新间隔').waitFor();
    await shot('settings-zh');
    await page.keyboard.press('Escape');
    await page.getByTestId('language').selectOption('en');
  });

  it('titles the Timers board columns', async () => {
    await manager.api.POST('/api/requirements/{id}/timers', {
      params: { path: { id: worked } },
      body: { description: 'Check the nightly benchmark', intervalSeconds: 3600, schedule: 'once' },
    });
    await page.getByRole('link', { exact: true, name: 'Timers' }).click();
    const titles = await page.getByTestId('timers-board').locator('h2').allTextContents();
    expect(titles).toEqual(['Active', 'Completed', 'Cancelled']);
    await shot('board-timers');
  });

  it("shows a review's outcome on the Pull requests board after a reload", async () => {
    github.addPullRequest({
      headBranch: 'timings',
      headSha: '2222222bbbb',
      number: 7,
      repository: 'org/repo',
      title: 'Flush timings',
    });
    const url = 'https://github.com/org/repo/pull/7';
    const registered = await manager.api.POST('/api/agent/pull-requests', {
      body: {
        baseBranch: 'main',
        headBranch: 'timings',
        headSha: '2222222bbbb',
        number: 7,
        repository: 'org/repo',
        requirementId: worked,
        status: 'open',
        title: 'Flush timings',
        url,
      },
    });
    expect(registered.status).toBe(200);
    const finding = { text: 'Looks right.' };
    stub.scriptFor(url, [finding, finding, finding]);
    const review = await manager.api.POST('/api/pull-requests/{id}/review-requests', {
      params: { path: { id: registered.data!.id } },
      body: { provider: 'codex' },
    });
    expect(review.status).toBe(202);
    await until(
      'the review to succeed',
      async () =>
        (
          await ok(
            manager.api.GET('/api/review-requests', { params: { query: { pullRequestId: registered.data!.id } } }),
          )
        ).items[0]?.status === 'succeeded',
      90_000,
    );
    await page.goto(`${manager.origin}/pull-requests`);
    await page
      .getByTestId('pull-requests-board')
      .locator('[data-column="open"] li', { hasText: 'org/repo#7' })
      .getByText('review succeeded')
      .waitFor();
    await shot('board-pull-requests-reloaded');
  });

  it('is a first-class phone layout: a compact header, one scroll container, Send in view, panes and a column switcher', async () => {
    await page.setViewportSize(PHONE);
    await open(worked);
    const header = await page.locator('.topbar').boundingBox();
    process.stdout.write(`phone header height: ${header!.height.toFixed(0)} px\n`);
    // Three short rows (actions, the search box, the boards), was four rows of ~190 px.
    expect(header!.height).toBeLessThanOrEqual(110);
    const scrolls = () =>
      page.evaluate(() => {
        const pageEl = document.querySelector('.page')!;
        return {
          document: document.documentElement.scrollHeight - document.documentElement.clientHeight,
          page: pageEl.scrollHeight - pageEl.clientHeight,
        };
      });
    expect(await scrolls()).toEqual({ document: 0, page: 0 });
    expect(await horizontalOverflow()).toBeLessThanOrEqual(0);
    await expect(inViewport(page.getByTestId('composer-send'), PHONE)).resolves.toBe(true);
    await shot('phone-detail-conversation');
    await page.getByTestId('pane-details').click();
    await page.getByTestId('runs').waitFor();
    await page.getByTestId('messages').waitFor({ state: 'hidden' });
    expect(await scrolls()).toEqual({ document: 0, page: 0 });
    await page.getByTestId('tab-trace').click();
    await page.getByTestId('trace').waitFor();
    await shot('phone-detail-details');

    // The review before woke its agent: the card is in "waiting confirmation" again once that run ended.
    await until(
      'the worked Requirement back in waiting confirmation',
      async () => {
        const read = await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: worked } } }));
        return read.status === 'waiting_confirmation' || undefined;
      },
      60_000,
    );
    await page.goto(`${manager.origin}/requirements`);
    const switcher = page.getByTestId('column-switcher');
    await switcher.waitFor();
    await switcher.locator('[data-column="waiting_confirmation"]').click();
    const board = page.getByTestId('requirements-board');
    await board.locator('[data-column="todo"]').waitFor({ state: 'hidden' });
    const card = board.locator(`[data-requirement-id="${worked}"]`);
    await card.waitFor();
    // The picked column's first card is in the upper half of the screen, not after every TODO card.
    expect((await settledBox(card)).y).toBeLessThan(PHONE.height / 2);
    await shot('phone-board');
    await page.setViewportSize(DESKTOP);
  });

  it('shows where focus is on "Attach files"', async () => {
    await open(worked);
    await page.getByTestId('composer-text').focus();
    await page.keyboard.press('Tab');
    await expect(
      page.evaluate(() => (document.activeElement as unknown as { type?: string } | null)?.type),
    ).resolves.toBe('file');
    const outline = await page
      .getByTestId('composer-file')
      .evaluate((el) => getComputedStyle((el as unknown as El).parentElement!).outlineStyle);
    expect(outline).toBe('solid');
    await shot('attach-focus');
  });

  it('logged no console errors', () => {
    // Chromium logs the refused settings PATCH (a 400 the page shows under its field); nothing else.
    expect(browser.errors.filter((e) => !/status of 400 .*\/api\/configuration$/.test(e))).toEqual([]);
  });
});
