import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Page } from 'playwright-core';

import { type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { createRequirement, initRepository, settled, sh, startRun, WORKTREE_AGENT } from './support/git-repo';
import { ok } from './support/api';
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

jest.setTimeout(120_000);

/**
 * Issue 14 §8 in Chromium: what an agent changed in its worktree, file by file with its diff, a
 * comment on a line drafted and sent as a review naming file and line, and the branch on the card.
 */
describe('dashboard Changes tab in Chromium', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let browser: BrowserSession;
  let page: Page;
  let id = '';

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\nfirst line\n', 'src/old.ts': 'export const x = 1;\n' });
    manager = await startInProcess({ env: AGENTS, sandbox });
    id = (await createRequirement(manager, { title: 'Touch some files' })).id;
    // Committed, modified, renamed and untracked work: the agent runs these in its worktree.
    await startRun(
      manager,
      id,
      sh(
        'echo "<b>added</b>" > added.txt && git mv src/old.ts src/new.ts && git commit -q -m move && echo "second line" >> README.md',
      ),
    );
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
  });

  it('shows the branch and its state on the card', async () => {
    const requirement = await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
    const card = page.locator(`a[href="/requirements/${id}"]`);
    await expect(card.getByTestId('card-branch').textContent()).resolves.toBe(requirement.worktree!.branch);
    await expect(card.getByTestId('card-ahead').textContent()).resolves.toContain('1');
    await card.getByTestId('card-dirty').waitFor();
  });

  it('lists the changed files, renders a diff, and sends a comment on a line to the agent', async () => {
    await page.goto(`${manager.origin}/requirements/${id}`);
    await page.getByTestId('tab-changes').click();
    const files = page.getByTestId('changed-file');
    await files.first().waitFor();
    const listed = await files.evaluateAll((buttons) =>
      buttons.map((b) => [b.getAttribute('data-path'), b.querySelector('[data-status]')?.getAttribute('data-status')]),
    );
    expect(listed.sort()).toEqual(
      [
        ['README.md', 'modified'],
        ['added.txt', 'added'],
        ['src/new.ts', 'renamed'],
      ].sort(),
    );
    await page.locator('[data-testid="changed-file"][data-path="added.txt"]').click();
    // The file's text is shown as text: the agent's markup makes no element.
    await page.getByTestId('diff').getByText('<b>added</b>').waitFor();
    await expect(page.getByTestId('diff').locator('b').count()).resolves.toBe(0);

    await page.locator('[data-testid="changed-file"][data-path="README.md"]').click();
    const added = page.getByTestId('diff').locator('tr', { hasText: 'second line' }).locator('td.d2h-code-linenumber');
    await added.waitFor();
    await screenshot(page, 'changes-diff');
    await added.click();
    await page.getByTestId('line-comment').waitFor();
    // An empty comment says so, and adds nothing.
    await page.getByTestId('line-comment-send').click();
    await page.getByTestId('line-comment-error').waitFor();
    await page.getByTestId('line-comment-text').fill('Say why this line is here');
    await page.getByTestId('line-comment-send').click();
    await page.getByTestId('line-comment').waitFor({ state: 'detached' });
    // A draft of the review, not a message yet (issue 46 §1–2).
    await page.getByTestId('review-draft').waitFor();
    expect(await page.getByTestId('review-draft').textContent()).toContain('README.md:3');
    const before = (await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id } } }))).items;
    expect(before.some((m) => m.body.includes('Say why this line is here'))).toBe(false);

    await page.getByTestId('review-body').fill('Otherwise fine.');
    await screenshot(page, 'changes-review-draft');
    await expect(page.getByTestId('review-send').textContent()).resolves.toContain('(1)');
    await page.getByTestId('review-send').click();
    await page.getByTestId('review-thread').waitFor();
    const message = await until('the review in the conversation', async () => {
      const items = (await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id } } }))).items;
      return items.find((m) => m.author === 'human' && m.body.includes('Say why this line is here'));
    });
    expect(message.body).toContain('Review of your changes: 1 comment.');
    expect(message.body).toContain('README.md:3');
    expect(message.body).toContain('> second line');
    expect(message.body).toContain('Otherwise fine.');
    await expect(page.getByTestId('review-drafts').count()).resolves.toBe(0);

    // The sent thread is resolved and reopened from the page.
    await page.getByTestId('review-resolve').click();
    await page.locator('[data-testid="review-thread"][data-state="resolved"]').waitFor();
    await page.getByTestId('review-resolve').click();
    await page.locator('[data-testid="review-thread"][data-state="sent"]').waitFor();
  });
});
