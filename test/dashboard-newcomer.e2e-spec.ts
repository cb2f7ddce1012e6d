import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Page } from 'playwright-core';

import { ARTIFACTS, type BrowserSession, launchBrowser, screenshot, settledBox } from './support/browser';
import { createRequirement, initRepository, settled, sh, startRun, WORKTREE_AGENT } from './support/git-repo';
import { ok } from './support/api';
import { contrastOf } from './support/contrast';
import { startInProcess } from './support/in-process';
import { ROOT, Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { until } from './support/wait';

// Issue 26 ("daily use, tried as a new user would") in Debian's Chromium against the real built
// server, with the synthetic worktree agent: each item is walked through the page as a person
// would, in both themes and at a phone width where it is visual. Screenshots land in
// test-artifacts/dashboard-newcomer/ (looked at by a person; the assertions measure what they show).

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');
const AGENTS = {
  CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
  CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
  GH_TOKEN: '',
  GITHUB_TOKEN: '',
};
const DESKTOP = { height: 800, width: 1280 };
const PHONE = { height: 844, width: 390 };

jest.setTimeout(180_000);

// The page's globals used in `page.evaluate` callbacks, typed just enough (the test compiles without the DOM library).
declare const document: { documentElement: { dataset: Record<string, string | undefined> } };
declare const localStorage: { setItem(key: string, value: string): void };

describe('dashboard for a new user (issue 26) in Chromium', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let browser: BrowserSession;
  let page: Page;

  const shot = (name: string) => screenshot(page, path.join('..', 'dashboard-newcomer', name));
  const detail = () => page.getByTestId('requirement-detail');
  const open = async (id: string) => {
    await page.goto(`${manager.origin}/requirements/${id}`);
    await detail()
      .and(page.locator(`[data-requirement-id="${id}"]`))
      .waitFor();
  };
  const theme = async (choice: 'light' | 'dark') => {
    await page.evaluate((c) => localStorage.setItem('am.theme', c), choice);
    await page.reload();
    await detail().waitFor();
    await expect(page.evaluate(() => document.documentElement.dataset['theme'])).resolves.toBe(choice);
  };
  const errorToast = () => page.locator('.toast.error');

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    fs.rmSync(path.join(ARTIFACTS, '..', 'dashboard-newcomer'), { force: true, recursive: true });
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\nfirst line\nold line\n' });
    manager = await startInProcess({ env: AGENTS, sandbox });
    browser = await launchBrowser({ viewport: DESKTOP });
    page = browser.page;
    await page.goto(`${manager.origin}/?token=${manager.token}`);
    await page.waitForURL(`${manager.origin}/requirements`);
    await page.getByTestId('connection').and(page.locator('.live')).waitFor();
  });

  afterAll(async () => {
    await browser?.close();
    await manager?.stop();
    sandbox?.cleanup();
  });

  afterEach(async () => {
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await page.setViewportSize(DESKTOP);
  });

  it('keeps what the person typed when a start, a reply or an edit is refused (item 3)', async () => {
    const dependency = await createRequirement(manager, { title: 'Ship the API first' });
    const blocked = await createRequirement(manager, {
      dependsOn: [{ requirementId: dependency.id, until: 'done' }],
      title: 'Use the API',
    });
    await open(blocked.id);
    const composer = page.getByTestId('composer-text');
    const typed = 'Use the new endpoint, and keep the old one for a release.';
    await composer.fill(typed);
    // Blocked, Start is disabled with the reason (issue 26 §6); a start refused all the same (the
    // dependency set again in the moment before the click: the route answers the server's 409).
    await expect(page.getByTestId('start').isDisabled()).resolves.toBe(true);
    expect(
      (
        await manager.api.PUT('/api/requirements/{id}/dependencies', {
          params: { path: { id: blocked.id } },
          body: { dependsOn: [] },
        })
      ).status,
    ).toBe(200);
    await page.route('**/api/requirements/*/start', (route) =>
      route.fulfill({
        json: {
          code: 'dependency_unmet',
          message: `"Use the API" is blocked by "Ship the API first" (until done, ${dependency.id})`,
          statusCode: 409,
        },
        status: 409,
      }),
    );
    await page.getByTestId('start').click();
    // In words: the server's sentence, no "409 ·" in front; the status behind the toggle (issue 47 §2).
    const refused = errorToast().filter({ hasText: 'is blocked by' });
    await refused
      .getByTestId('toast-text')
      .getByText(/^"[^"]*" is blocked by .*\(until done/)
      .waitFor();
    await refused.getByTestId('toast-detail').locator('summary').click();
    await expect(refused.getByTestId('toast-detail').locator('pre').innerText()).resolves.toBe(
      'HTTP 409 · dependency_unmet',
    );
    await refused.locator('button.ghost').click();
    await expect(composer.inputValue()).resolves.toBe(typed);
    await shot('refused-start-keeps-draft');

    // A reply that fails (the server answers 503 here) keeps the draft, too.
    await page.route('**/api/requirements/*/reply', (route) =>
      route.fulfill({ json: { code: 'unavailable', message: 'Try again', statusCode: 503 }, status: 503 }),
    );
    await page.getByTestId('composer-send').click();
    await errorToast().getByText('Try again', { exact: true }).waitFor();
    await expect(composer.inputValue()).resolves.toBe(typed);

    // A refused edit leaves the dialog open with the new title in it.
    await page.route('**/api/requirements/*', (route) =>
      route.request().method() === 'PATCH'
        ? route.fulfill({ json: { code: 'conflict', message: 'Edited elsewhere', statusCode: 409 }, status: 409 })
        : route.fallback(),
    );
    await page.getByTestId('edit').click();
    await page.getByTestId('create-title').fill('Use the API, edited');
    await page.getByTestId('create-submit').click();
    await errorToast().getByText('Edited elsewhere', { exact: true }).waitFor();
    await expect(page.getByTestId('create-title').inputValue()).resolves.toBe('Use the API, edited');
    page.once('dialog', (d) => void d.accept());
    await page.keyboard.press('Escape');
    await page.getByTestId('create-dialog').waitFor({ state: 'detached' });
    await page.unrouteAll({ behavior: 'ignoreErrors' });

    // Once the dependency is out of the way the same Start takes the draft, and only then is it cleared.
    await page.getByTestId('start').click();
    await page.getByTestId('messages').getByText(typed).waitFor();
    await expect(composer.inputValue()).resolves.toBe('');
  });

  it('draws the diff readable in light and dark: added, removed and context text at 4.5:1 or more (item 2)', async () => {
    const changed = await createRequirement(manager, { title: 'Touch the readme' });
    await startRun(
      manager,
      changed.id,
      sh(`sed -i 's/old line/new line/' README.md && echo "added line" >> README.md`),
    );
    await settled(manager, changed.id, 1);
    await open(changed.id);
    const measure = async () => {
      await page.getByTestId('tab-changes').click();
      await page.locator('[data-testid="changed-file"][data-path="README.md"]').click();
      const diff = page.getByTestId('diff');
      await diff.locator('tr', { hasText: 'added line' }).waitFor();
      const ratios: Record<string, number> = {};
      for (const [kind, cell] of [
        ['added', 'td.d2h-ins:not(.d2h-code-linenumber)'],
        ['removed', 'td.d2h-del:not(.d2h-code-linenumber)'],
        ['context', 'td.d2h-cntx:not(.d2h-code-linenumber)'],
      ] as const) {
        const measured = await contrastOf(diff.locator(cell).first().locator('.d2h-code-line-ctn'));
        // Computed colours say nothing about a CSS filter over them: what is measured must be what shows.
        expect(measured.filters).toEqual([]);
        ratios[kind] = measured.ratio;
        ratios[`${kind}Background`] = measured.background;
      }
      return ratios;
    };
    await theme('light');
    const light = await measure();
    await shot('diff-light');
    await theme('dark');
    const dark = await measure();
    await shot('diff-dark');

    // A comment on a line whose saving fails keeps its form and text (the composer rule of item 3).
    await page.route('**/api/requirements/*/review-comments', (route) =>
      route.request().method() === 'POST'
        ? route.fulfill({ json: { code: 'unavailable', message: 'Try again', statusCode: 503 }, status: 503 })
        : route.continue(),
    );
    await page.getByTestId('diff').locator('tr', { hasText: 'added line' }).locator('td.d2h-code-linenumber').click();
    await page.getByTestId('line-comment-text').fill('Why this line?');
    await page.getByTestId('line-comment-send').click();
    await errorToast().getByText('Try again', { exact: true }).waitFor();
    await expect(page.getByTestId('line-comment-text').inputValue()).resolves.toBe('Why this line?');
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await page.setViewportSize(PHONE);
    await page.getByTestId('pane-details').click();
    await page.getByTestId('diff').locator('tr', { hasText: 'added line' }).scrollIntoViewIfNeeded();
    await shot('diff-dark-390');
    process.stdout.write(`diff contrast: light ${JSON.stringify(light)}, dark ${JSON.stringify(dark)}\n`);
    for (const ratios of [light, dark]) {
      expect(ratios['added']).toBeGreaterThanOrEqual(4.5);
      expect(ratios['removed']).toBeGreaterThanOrEqual(4.5);
      expect(ratios['context']).toBeGreaterThanOrEqual(4.5);
    }
    // Dark means a dark background behind the diff, not a light diff on a dark page.
    expect(dark['contextBackground']).toBeLessThan(0.1);
    await theme('light');
  });

  it('shows a failed first run as failed, with Retry as the way on and no "Confirm done" offered (item 10)', async () => {
    const failing = await createRequirement(manager, { title: 'Fails at once' });
    await open(failing.id);
    // The worktree agent runs the command and fails with it: a real failed run, as the server records it.
    await page.getByTestId('composer-text').fill(sh('exit 3'));
    await page.getByTestId('start').click();
    await page.getByTestId('failure-banner').waitFor({ timeout: 60_000 });
    const requirement = await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: failing.id } } }));
    expect(requirement.session.state).toBe('failed');
    const status = page.getByTestId('detail-status');
    for (const choice of ['light', 'dark'] as const) {
      await theme(choice);
      await expect(status.textContent()).resolves.toBe('Run failed');
      await expect(status.getAttribute('class')).resolves.toContain('danger');
      await page.getByTestId('start').getByText('Retry').waitFor();
      await expect(page.getByTestId('start').getAttribute('class')).resolves.toContain('primary');
      // Confirming stays possible, but it is named for what it is after a failure and not suggested.
      const confirm = page.getByTestId('confirm');
      await expect(confirm.textContent()).resolves.not.toContain('Confirm done');
      expect((await confirm.getAttribute('class')) ?? '').not.toContain('primary');
      await shot(`failed-detail-${choice}`);
    }
    await page.setViewportSize(PHONE);
    await shot('failed-detail-dark-390');
    await page.setViewportSize(DESKTOP);
    await theme('light');

    await page.getByRole('link', { name: /Back to boards/ }).click();
    const card = page.locator(`a.card[data-requirement-id="${failing.id}"]`);
    await card.getByTestId('session-badge').and(page.locator('.danger')).getByText('Run failed').waitFor();
    await shot('failed-card');
  });

  it('shows a cancelled Requirement as cancelled only, says why its composer is closed, and finds it on the board on request (item 9)', async () => {
    const withdrawn = await createRequirement(manager, { title: 'Withdrawn after a run' });
    await startRun(manager, withdrawn.id, sh('true'));
    await settled(manager, withdrawn.id, 1);
    expect(
      (await manager.api.POST('/api/requirements/{id}/cancel', { params: { path: { id: withdrawn.id } } })).status,
    ).toBe(200);
    await open(withdrawn.id);
    for (const choice of ['light', 'dark'] as const) {
      await theme(choice);
      await page
        .getByTestId('detail-status')
        .and(page.locator('[data-status="cancelled"]'))
        .getByText('Cancelled')
        .waitFor();
      await expect(page.locator('.detail-head').getByText('Completed').count()).resolves.toBe(0);
      await expect(page.getByTestId('composer-text').isDisabled()).resolves.toBe(true);
      await page
        .getByTestId('composer-closed')
        .getByText(/cancelled: nothing more goes to its agent/)
        .waitFor();
      await expect(page.getByTestId('composer-text').getAttribute('aria-describedby')).resolves.toBe('composer-closed');
      await shot(`cancelled-detail-${choice}`);
    }
    await page.setViewportSize(PHONE);
    await expect(page.getByTestId('composer-closed').isVisible()).resolves.toBe(true);
    await shot('cancelled-detail-dark-390');
    await page.setViewportSize(DESKTOP);
    await theme('light');

    await page.getByRole('link', { name: /Back to boards/ }).click();
    const board = page.getByTestId('requirements-board');
    const card = board.locator(`a.card[data-requirement-id="${withdrawn.id}"]`);
    await board.locator('[data-column="todo"]').waitFor();
    await expect(card.count()).resolves.toBe(0);
    await page.getByTestId('show-cancelled').check();
    await board.locator('[data-column="cancelled"]').locator(`a.card[data-requirement-id="${withdrawn.id}"]`).waitFor();
    await expect(card.getByText('Completed').count()).resolves.toBe(0);
    await shot('cancelled-column');
    await page.setViewportSize(PHONE);
    await page.getByTestId('column-switcher').locator('[data-column="cancelled"]').click();
    await card.waitFor();
    await shot('cancelled-column-390');
  });

  it('drops the "Queued" note once the next run took the queued message (item 7)', async () => {
    const busy = await createRequirement(manager, { title: 'Two runs in a row' });
    await open(busy.id);
    const runs = async () =>
      (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: busy.id } } }))).items;
    await page.getByTestId('composer-text').fill(sh('sleep 3'));
    await page.getByTestId('start').click();
    await page.getByTestId('session-state').and(page.locator('[data-state="running"]')).waitFor();
    // A reply during the run waits for it: the note says so.
    await page.getByTestId('composer-text').fill(sh('sleep 8'));
    await page.getByTestId('composer-send').click();
    const note = page.getByTestId('queued-note');
    await note.waitFor();
    await shot('queued-note');
    // The first run ends and the next one takes the reply; while that one still works, the note is gone.
    await until('the second run at work', async () => {
      const all = await runs();
      return all.length === 2 && all.some((r) => r.status === 'running') ? all : undefined;
    });
    await note.waitFor({ state: 'detached', timeout: 5_000 });
    await expect(page.getByTestId('session-state').getAttribute('data-state')).resolves.toBe('running');
    await shot('queued-note-gone');
  });

  it("writes English dates in the browser's own locale: en-US and en-GB (item 12)", async () => {
    const dated = await createRequirement(manager, { title: 'Dated' });
    const created = new Date(dated.createdAt);
    const [month, day] = [created.getMonth() + 1, created.getDate()];
    const pad = (n: number) => String(n).padStart(2, '0');
    for (const [locale, pattern, start] of [
      ['en-US', /^\d{1,2}\/\d{1,2}\/\d{2}, \d{1,2}:\d{2}\s[AP]M$/, `${month}/${day}/`],
      ['en-GB', /^\d{2}\/\d{2}\/\d{4}, \d{2}:\d{2}$/, `${pad(day)}/${pad(month)}/`],
    ] as const) {
      const other = await launchBrowser({ locale, viewport: DESKTOP });
      try {
        await other.page.goto(`${manager.origin}/?token=${manager.token}`);
        await other.page.waitForURL(`${manager.origin}/requirements`);
        const time = other.page.locator(`a.card[data-requirement-id="${dated.id}"] time`);
        await time.waitFor();
        const text = (await time.textContent()) ?? '';
        process.stdout.write(`${locale}: ${text}\n`);
        expect(text).toMatch(pattern);
        expect(text.startsWith(start)).toBe(true);
        await screenshot(other.page, path.join('..', 'dashboard-newcomer', `dates-${locale}`));
      } finally {
        await other.close();
      }
    }
  });

  it('says "1 file", labels "Needs you" at desktop widths and the status dot, and says on Pull requests that no GitHub token is set (item 20)', async () => {
    const one = await createRequirement(manager, { title: 'One file' });
    await startRun(manager, one.id, sh('echo one > one.txt'));
    await settled(manager, one.id, 1);
    await open(one.id);
    await page.getByTestId('tab-changes').click();
    await page
      .getByTestId('changes-summary')
      .getByText(/^1 file changed against main/)
      .waitFor();

    const attention = page.getByTestId('attention');
    for (const width of [1280, 1440]) {
      await page.setViewportSize({ height: 800, width });
      await expect(attention.getByText('Needs you').isVisible()).resolves.toBe(true);
      // Still one header row.
      expect((await settledBox(page.locator('.topbar'))).height).toBeLessThanOrEqual(56);
    }
    // The dot says what it is, to a screen reader and as a tooltip.
    const dot = page.getByRole('status', { name: 'Connection to the server: Live' });
    await expect(dot.getAttribute('title')).resolves.toBe('Connection to the server: Live');

    await page.goto(`${manager.origin}/pull-requests`);
    const notice = page.getByTestId('github-setup');
    await notice.getByText(/GitHub is not set up: pull requests are not followed/).waitFor();
    await notice.getByText(/no token/).waitFor();
    await notice
      .getByText(/GITHUB_TOKEN/)
      .first()
      .waitFor();
    for (const choice of ['light', 'dark'] as const) {
      await page.evaluate((c) => localStorage.setItem('am.theme', c), choice);
      await page.reload();
      await notice.waitFor();
      await shot(`cosmetic-1440-${choice}`);
    }
    await page.setViewportSize(PHONE);
    await shot('cosmetic-pull-requests-390');
    await page.evaluate(() => localStorage.setItem('am.theme', 'light'));
  });
});
