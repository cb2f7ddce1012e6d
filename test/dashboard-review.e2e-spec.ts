import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Page } from 'playwright-core';

import { ok } from './support/api';
import { type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { contrastOf } from './support/contrast';
import { createRequirement, initRepository, reply, settled, sh, startRun, WORKTREE_AGENT } from './support/git-repo';
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
const lines = (n: number, word: string) => Array.from({ length: n }, (_, k) => `${word} ${k + 1}`).join('\n') + '\n';

jest.setTimeout(180_000);

// The page's globals used in `evaluate` callbacks, typed just enough (the test compiles without the DOM library).
declare const document: {
  activeElement: { getAttribute(name: string): string | null } | null;
  documentElement: { scrollWidth: number; dataset: Record<string, string | undefined> };
};
declare const localStorage: { setItem(key: string, value: string): void };

/**
 * Issue 46 §7 in Chromium: the review view of a Requirement two runs of the synthetic worktree
 * agent changed. The whole review is done with the keyboard (lines, a range, files, comments,
 * viewed, the overall comment, sending), then a run's own changes and a rewind to before it; the
 * diff's text is measured at 4.5:1 or more in both themes, and the view fits a 390 px phone.
 */
describe('the review view in Chromium', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let browser: BrowserSession;
  let page: Page;
  let id = '';

  const shot = (name: string) => screenshot(page, path.join('..', 'dashboard-review', name));
  const view = () => page.getByTestId('review-view');
  const focusedTestId = () => page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? null);
  /** `c`, and the comment's box taking the focus (as a person waits to see it open). */
  const comment = async () => {
    await press('c');
    await until('the comment box focused', async () => (await focusedTestId()) === 'review-comment-text' || undefined);
  };
  const focusedKey = () => page.evaluate(() => document.activeElement?.getAttribute('data-key') ?? null);
  const press = async (...keys: string[]) => {
    for (const key of keys) {
      await page.keyboard.press(key);
    }
  };
  const openFile = () => page.getByTestId('review-file-path').textContent();
  /** `j` until the row `key` has the focus (each press waits for the focus to move). */
  const downTo = async (key: string) => {
    for (let k = 0; k < 20 && (await focusedKey()) !== key; k++) {
      const before = await focusedKey();
      await press('j');
      await until('the focus to move down', async () => (await focusedKey()) !== before || undefined);
    }
    expect(await focusedKey()).toBe(key);
  };

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, {
      'README.md': '# repo\n',
      'src/a.ts': lines(20, 'alpha'),
      'src/b.ts': lines(6, 'beta'),
    });
    manager = await startInProcess({ env: AGENTS, sandbox });
    id = (await createRequirement(manager, { title: 'Reviewed by keyboard' })).id;
    // Run 1 edits two lines of a.ts, removes a line of b.ts and commits; run 2 adds c.txt.
    await startRun(
      manager,
      id,
      sh(
        "sed -i 's/^alpha 5$/alpha five/; s/^alpha 6$/alpha six/' src/a.ts && sed -i '/^beta 3$/d' src/b.ts && git commit -qam run1",
      ),
    );
    await settled(manager, id, 1);
    await reply(manager, id, sh('echo "third file" > c.txt'));
    await settled(manager, id, 2);
    browser = await launchBrowser();
    page = browser.page;
    await page.goto(`${manager.origin}/?token=${manager.token}`);
    await page.waitForURL(`${manager.origin}/requirements`);
  });

  afterAll(async () => {
    await browser?.close();
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('takes a whole review from the keyboard: lines, a range, files, viewed, an old-side line, the overall comment, send', async () => {
    await page.goto(`${manager.origin}/requirements/${id}`);
    await page.getByTestId('tab-changes').click();
    await page.getByTestId('open-review').click();
    await view().waitFor();
    await until(
      'three changed files listed',
      async () => (await page.getByTestId('review-file').count()) === 3 || undefined,
    );
    expect(await openFile()).toBe('c.txt');
    await until('the first line focused', async () => (await focusedKey()) === 'new:1' || undefined);

    // n: the next file (src/a.ts); j moves down its rows to "alpha five", shift+j takes "alpha six" too.
    await press('n');
    await until('src/a.ts open', async () => (await openFile()) === 'src/a.ts' || undefined);
    await until('a.ts rows', async () => ((await focusedKey()) ?? '').length > 0 || undefined);
    await downTo('new:5');
    await press('Shift+J');
    await comment();
    await page.getByTestId('review-comment-form').getByText('Comment on src/a.ts, lines 5–6').waitFor();
    // Ctrl+Enter on an empty comment says so and keeps the form.
    await press('Control+Enter');
    await page.getByTestId('review-comment-error').waitFor();
    await page.keyboard.type('Name these two better');
    await press('Control+Enter');
    await page.getByTestId('review-comment-form').waitFor({ state: 'detached' });
    const draft = page.getByTestId('review-thread').filter({ hasText: 'Name these two better' });
    await draft.getByText('draft').waitFor();
    await page.getByTestId('review-send').getByText('Send review (1)').waitFor();

    // v marks the file viewed; n goes on to src/b.ts, where a removed line takes an old-side comment.
    await press('v');
    await page.getByTestId('review-viewed-count').getByText('1 of 3 files viewed').waitFor();
    await press('n');
    await until('src/b.ts open', async () => (await openFile()) === 'src/b.ts' || undefined);
    await downTo('old:3');
    await comment();
    await page.keyboard.type('Why did beta 3 go?');
    await press('Control+Enter');
    await page.getByTestId('review-send').getByText('Send review (2)').waitFor();
    // The file tree counts each file's comments.
    await expect(
      page
        .locator('[data-testid="review-file"][data-path="src/a.ts"] [data-testid="review-file-comments"]')
        .textContent(),
    ).resolves.toContain('1');
    await shot('review-drafts-light');

    // r: the overall comment; Ctrl+Enter sends the review as one message with both anchors.
    await press('r');
    await until('the overall comment focused', async () => (await focusedTestId()) === 'review-overall' || undefined);
    await page.keyboard.type('Otherwise good.');
    await press('Control+Enter');
    await page.getByTestId('review-send').getByText('Send review (0)').waitFor();
    const messages = (await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id } } }))).items;
    const review = messages.find((m) => m.body.includes('Name these two better'));
    expect(review?.body).toContain('src/a.ts:5-6');
    expect(review?.body).toContain('src/b.ts:3');
    expect(review?.body).toContain('Why did beta 3 go?');
    expect(review?.body).toContain('Otherwise good.');
    // Sent threads stay under their lines, open.
    const thread = page.getByTestId('review-thread').filter({ hasText: 'Why did beta 3 go?' });
    await thread.getByText('open').waitFor();
    // The run the review woke appears in the run selector, without a reload. Once it is over (no
    // import left to read anything again), a thread resolved elsewhere shows resolved: its event alone.
    await page.getByTestId('review-range').locator('option', { hasText: 'Run 3' }).waitFor({ state: 'attached' });
    await settled(manager, id, 3);
    const sent = (await ok(manager.api.GET('/api/requirements/{id}/review-comments', { params: { path: { id } } })))
      .items;
    const beta = sent.find((c) => c.body === 'Why did beta 3 go?')!;
    await ok(
      manager.api.PATCH('/api/requirements/{id}/review-comments/{commentId}', {
        body: { state: 'resolved' },
        params: { path: { commentId: beta.id, id } },
      }),
    );
    await thread.getByTestId('review-thread-state').getByText('resolved').waitFor({ timeout: 10_000 });
    expect(browser.errors).toEqual([]);
  });

  it('shows the diff split side by side, and the diff’s text at 4.5:1 or more in both themes', async () => {
    await page.getByTestId('review-split').click();
    await page.locator('.pair').first().waitFor();
    await page.getByTestId('review-unified').click();
    const theme = async (choice: 'light' | 'dark') => {
      await page.evaluate((c) => localStorage.setItem('am.theme', c), choice);
      await page.reload();
      await view().waitFor();
      await page.locator('[data-testid="review-file"][data-path="src/b.ts"]').click();
      await page.locator('.line.del').first().waitFor();
      await expect(page.evaluate(() => document.documentElement.dataset['theme'])).resolves.toBe(choice);
    };
    const measure = async () => {
      const ratios: Record<string, number> = {};
      for (const [name, selector] of [
        ['removed', '.line.del .text'],
        ['removed number', '.line.del .num'],
        ['removed sign', '.line.del .sign'],
        ['context', '.line.context .text'],
        ['context number', '.line.context .num'],
        ['hunk header', '.hunk'],
      ] as const) {
        const measured = await contrastOf(page.locator(selector).first());
        expect(measured.filters).toEqual([]);
        ratios[name] = Number(measured.ratio.toFixed(2));
      }
      await page.locator('[data-testid="review-file"][data-path="c.txt"]').click();
      await page.locator('.line.add').first().waitFor();
      for (const [name, selector] of [
        ['added', '.line.add .text'],
        ['added number', '.line.add .num'],
        ['added sign', '.line.add .sign'],
      ] as const) {
        ratios[name] = Number((await contrastOf(page.locator(selector).first())).ratio.toFixed(2));
      }
      return ratios;
    };
    await theme('light');
    const light = await measure();
    await shot('review-light');
    await theme('dark');
    const dark = await measure();
    await shot('review-dark');
    process.stdout.write(`review diff contrast: light ${JSON.stringify(light)}, dark ${JSON.stringify(dark)}\n`);
    for (const ratios of [light, dark]) {
      for (const ratio of Object.values(ratios)) {
        expect(ratio).toBeGreaterThanOrEqual(4.5);
      }
    }
    await theme('light');
  });

  it('fits a 390 px phone', async () => {
    await page.setViewportSize(PHONE);
    await page.reload();
    await view().waitFor();
    await page.locator('.line').first().waitFor();
    await expect(page.evaluate(() => document.documentElement.scrollWidth)).resolves.toBeLessThanOrEqual(PHONE.width);
    const tree = await page.locator('nav.file-tree').boundingBox();
    const diff = await page.getByTestId('review-diff').boundingBox();
    expect(tree!.width).toBeLessThanOrEqual(PHONE.width);
    expect(diff!.x + diff!.width).toBeLessThanOrEqual(PHONE.width + 1);
    await shot('review-390');
    await page.setViewportSize({ height: 800, width: 1280 });
  });

  it('shows what one run changed, and rewinds to before it after listing what goes', async () => {
    // The review sent above woke the agent: its run (the third) ends first, or a rewind is refused.
    await settled(manager, id, 3);
    await page.reload();
    await view().waitFor();
    const checkpoints = (await ok(manager.api.GET('/api/requirements/{id}/checkpoints', { params: { path: { id } } })))
      .items;
    const start2 = checkpoints.filter((c) => c.kind === 'run_start')[1];
    await page.getByTestId('review-range').selectOption({ label: 'Run 2' });
    await until('run 2’s files', async () => {
      const paths = await page.getByTestId('review-file').evaluateAll((b) => b.map((x) => x.getAttribute('data-path')));
      return paths.join(',') === 'c.txt' || undefined;
    });
    // A run's own diff numbers its lines in another version: it takes no comments, and says where they go.
    await page.getByTestId('review-run-note').waitFor();
    await page.locator('.line').first().waitFor();
    await press('c');
    await expect(page.getByTestId('review-comment-form').count()).resolves.toBe(0);
    await page.getByTestId('review-rewind').click();
    const confirm = page.getByTestId('review-rewind-confirm');
    await confirm.getByText('Rewind to before Run 2?').waitFor();
    await confirm.getByText('c.txt').waitFor();
    await shot('review-rewind-confirm');
    await confirm.getByTestId('review-rewind-go').click();
    await until('the rewind recorded', async () => {
      const after = (await ok(manager.api.GET('/api/requirements/{id}/checkpoints', { params: { path: { id } } })))
        .items;
      return after.some((c) => c.kind === 'rewind') || undefined;
    });
    // Back on all changes: c.txt is gone from the agent's working copy, run 1's work stays.
    await until('c.txt gone from the list', async () => {
      const paths = await page.getByTestId('review-file').evaluateAll((b) => b.map((x) => x.getAttribute('data-path')));
      return (paths.length === 2 && !paths.includes('c.txt')) || undefined;
    });
    const requirement = await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
    expect(fs.existsSync(path.join(requirement.worktree!.path!, 'c.txt'))).toBe(false);
    expect(requirement.worktree!.workSha).toBe(start2.commit);
  });
});
