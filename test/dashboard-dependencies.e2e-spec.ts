import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Page } from 'playwright-core';

import type { Schemas } from '@libs/api-client';

import { ok } from './support/api';
import { ARTIFACTS, type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { git, initRepository } from './support/git-repo';
import { startInProcess } from './support/in-process';
import { ROOT, Sandbox, type TestManager, makeSandbox } from './support/manager-process';

// Issue 26 §6 (dependencies and base ref in the dialogs, "blocked by" on the detail page), the
// rest of §5 (a repository without commit: the card's badge, the create answer's warning, the
// first commit), "start right away" with an unmet dependency (kept as autoStart, issue 47 §5), and
// a refused start that left the dialog ready to create a duplicate, in Debian's Chromium against a real manager in the test's process. Screenshots land in
// test-artifacts/dashboard-dependencies/ (looked at by a person), in both themes and at 390 px.

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');
const DESKTOP = { height: 800, width: 1280 };
const PHONE = { height: 844, width: 390 };

jest.setTimeout(180_000);

declare const document: {
  documentElement: { dataset: Record<string, string | undefined>; scrollWidth: number; clientWidth: number };
};
declare const localStorage: { setItem(key: string, value: string): void };

type Requirement = Schemas['RequirementResponseDto'];

function harness(prefix: string) {
  const ctx = {} as { sandbox: Sandbox; manager: TestManager; browser: BrowserSession; page: Page };
  const page = () => ctx.page;
  return {
    ctx,
    shot: (name: string) => screenshot(page(), path.join('..', 'dashboard-dependencies', `${prefix}-${name}`)),
    create: async (title: string, extra: object = {}) =>
      await ok(ctx.manager.api.POST('/api/requirements', { body: { provider: 'codex', title, ...extra } })),
    /** Sets the theme (stored, as the settings do) and loads `url` in it. */
    goto: async (url: string, theme: 'light' | 'dark' = 'light') => {
      await page().goto(`${ctx.manager.origin}${url}`);
      await page().evaluate((c) => localStorage.setItem('am.theme', c), theme);
      await page().reload();
      await expect(page().evaluate(() => document.documentElement.dataset['theme'])).resolves.toBe(theme);
    },
    overflow: () => page().evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth),
    async start(sandbox: Sandbox) {
      ctx.sandbox = sandbox;
      ctx.manager = await startInProcess({ sandbox });
      ctx.browser = await launchBrowser({ viewport: DESKTOP });
      ctx.page = ctx.browser.page;
      await ctx.page.goto(`${ctx.manager.origin}/?token=${ctx.manager.token}`);
      await ctx.page.waitForURL(`${ctx.manager.origin}/requirements`);
    },
    async stop() {
      await ctx.browser?.close();
      await ctx.manager?.stop();
      ctx.sandbox?.cleanup();
    },
  };
}

beforeAll(() => {
  if (!fs.existsSync(INDEX)) {
    throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
  }
  fs.rmSync(path.join(ARTIFACTS, '..', 'dashboard-dependencies'), { force: true, recursive: true });
});

describe('dependencies and base ref in the dashboard (issue 26 §6)', () => {
  const h = harness('deps');
  const page = () => h.ctx.page;
  let api: Requirement;
  let docs: Requirement;
  let dependent: Requirement;

  beforeAll(async () => {
    const sandbox = makeSandbox();
    initRepository(sandbox.workspace);
    git(sandbox.workspace, 'branch', 'release');
    await h.start(sandbox);
    api = await h.create('Ship the payments API');
    docs = await h.create('Write the payments docs');
    await h.create('Unrelated cleanup');
  });

  afterAll(() => h.stop());

  /** Types into the dialog's "Depends on" and picks the result titled `title`. */
  const pick = async (query: string, title: string) => {
    await page().getByTestId('depends-on-search').fill(query);
    await page().getByTestId('depends-on-result').filter({ hasText: title }).click();
    await page().getByTestId('depends-on-item').filter({ hasText: title }).waitFor();
  };

  it('the New dialog picks dependencies by typing (until done / until merged, removable) and takes a base ref', async () => {
    for (const [theme, viewport] of [
      ['light', DESKTOP],
      ['dark', DESKTOP],
      ['light', PHONE],
    ] as const) {
      await page().setViewportSize(viewport);
      await h.goto('/requirements', theme);
      await page().getByTestId('new-requirement').click();
      await page().getByTestId('create-title').fill('Use the payments API');
      // Search as you type: a word's start is enough; one result per Requirement.
      await page().getByTestId('depends-on-search').fill('paym');
      await page().getByTestId('depends-on-result').filter({ hasText: 'Write the payments docs' }).waitFor();
      await expect(page().getByTestId('depends-on-result').count()).resolves.toBe(2);
      await h.shot(`create-results-${theme}-${viewport.width}`);
      await page().getByTestId('depends-on-result').filter({ hasText: 'Ship the payments API' }).click();
      await pick('docs', 'Write the payments docs');
      await pick('cleanup', 'Unrelated cleanup');
      // A chosen one is not offered again.
      await page().getByTestId('depends-on-search').fill('ship');
      await page().getByTestId('depends-on-none').waitFor();
      await page().getByTestId('depends-on-search').fill('');
      await page()
        .getByTestId('depends-on-item')
        .filter({ hasText: 'Write the payments docs' })
        .getByTestId('depends-on-until')
        .selectOption('merged');
      await page()
        .getByTestId('depends-on-item')
        .filter({ hasText: 'Unrelated cleanup' })
        .getByTestId('depends-on-remove')
        .click();
      await page()
        .getByTestId('depends-on-item')
        .filter({ hasText: 'Unrelated cleanup' })
        .waitFor({ state: 'detached' });
      await expect(page().getByTestId('depends-on-item').count()).resolves.toBe(2);
      await page().getByTestId('create-base-ref').fill('release');
      expect(await h.overflow()).toBeLessThanOrEqual(0);
      await h.shot(`create-dialog-${theme}-${viewport.width}`);
      if (theme !== 'light' || viewport !== PHONE) {
        // The draft's "discard?" question, answered yes.
        page().once('dialog', (d) => void d.accept());
        await page().keyboard.press('Escape');
        await page().getByTestId('create-dialog').waitFor({ state: 'detached' });
        continue;
      }
      await page().getByTestId('create-submit').click();
      await page().waitForURL(/\/requirements\/req_/);
    }
    await page().setViewportSize(DESKTOP);
    const all = (await ok(h.ctx.manager.api.GET('/api/requirements'))).items.filter(
      (r) => r.title === 'Use the payments API',
    );
    expect(all).toHaveLength(1);
    dependent = all[0];
    expect(dependent.baseRef).toBe('release');
    expect(dependent.isolation).toBe('worktree');
    expect(dependent.dependsOn?.map((d) => [d.requirementId, d.until, d.state])).toEqual(
      expect.arrayContaining([
        [api.id, 'done', 'pending'],
        [docs.id, 'merged', 'pending'],
      ]),
    );
    expect(dependent.dependsOn).toHaveLength(2);
  });

  it('the detail page says what blocks it by title, with links, and disables Start with the reason', async () => {
    for (const [theme, viewport] of [
      ['light', DESKTOP],
      ['dark', DESKTOP],
      ['light', PHONE],
      ['dark', PHONE],
    ] as const) {
      await page().setViewportSize(viewport);
      await h.goto(`/requirements/${dependent.id}`, theme);
      const blocked = page().getByTestId('detail-blocked-by');
      // Titles, also when the board has not loaded those Requirements (a deep link): read for it.
      // Each title arrives on its own (the board's page or a read of that one): wait for both.
      await blocked
        .filter({ hasText: 'Write the payments docs' })
        .filter({ hasText: 'Ship the payments API' })
        .waitFor();
      const text = await blocked.innerText();
      expect(text).toMatch(/^Blocked by .* · Start waits until these are met\.$/);
      expect(text).toContain('Ship the payments API (until done)');
      expect(text).toContain('Write the payments docs (until merged)');
      expect(await blocked.innerText()).not.toContain('req_');
      const start = page().getByTestId('start');
      await expect(start.isDisabled()).resolves.toBe(true);
      await expect(start.getAttribute('title')).resolves.toBe('Start waits until these are met.');
      expect(await h.overflow()).toBeLessThanOrEqual(0);
      await h.shot(`detail-blocked-${theme}-${viewport.width}`);
    }
    await page().setViewportSize(DESKTOP);
    await page().getByTestId('blocked-by-link').filter({ hasText: 'Ship the payments API' }).click();
    await page().waitForURL(`${h.ctx.manager.origin}/requirements/${api.id}`);
    // Not blocked: no line, Start enabled.
    await page().getByTestId('start').waitFor();
    await expect(page().getByTestId('start').isDisabled()).resolves.toBe(false);
    await expect(page().getByTestId('detail-blocked-by').count()).resolves.toBe(0);
  });

  it('the 409 of a blocked start names the blocking titles', async () => {
    const refused = await h.ctx.manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: dependent.id } },
      body: {},
    });
    expect(refused.status).toBe(409);
    expect(refused.error).toMatchObject({ code: 'dependency_unmet' });
    expect(refused.error!.message).toContain(
      '"Use the payments API" is blocked by "Ship the payments API" (until done',
    );
    expect(refused.error!.message).toContain('"Write the payments docs" (until merged');
  });

  it('the edit dialog shows what it waits for by title and changes it', async () => {
    await page().setViewportSize(DESKTOP);
    await h.goto(`/requirements/${dependent.id}`, 'dark');
    await page().getByTestId('edit').click();
    await page().getByTestId('depends-on-item').filter({ hasText: 'Write the payments docs' }).waitFor();
    await page().getByTestId('depends-on-item').filter({ hasText: 'Ship the payments API' }).waitFor();
    await expect(page().getByTestId('depends-on-item').count()).resolves.toBe(2);
    expect((await page().getByTestId('depends-on-item').allInnerTexts()).join(' ')).not.toContain('req_');
    await expect(page().getByTestId('base-ref-fixed').innerText()).resolves.toContain('release');
    await h.shot('edit-dialog-dark-1280');
    await page()
      .getByTestId('depends-on-item')
      .filter({ hasText: 'Write the payments docs' })
      .getByTestId('depends-on-remove')
      .click();
    await page()
      .getByTestId('depends-on-item')
      .filter({ hasText: 'Write the payments docs' })
      .waitFor({ state: 'detached' });
    await page()
      .getByTestId('depends-on-item')
      .filter({ hasText: 'Ship the payments API' })
      .getByTestId('depends-on-until')
      .selectOption('merged');
    await page().getByTestId('create-submit').click();
    await page().getByTestId('create-dialog').waitFor({ state: 'detached' });
    const after = await ok(h.ctx.manager.api.GET('/api/requirements/{id}', { params: { path: { id: dependent.id } } }));
    expect(after.dependsOn?.map((d) => [d.requirementId, d.until])).toEqual([[api.id, 'merged']]);
    await expect(page().getByTestId('detail-blocked-by').innerText()).resolves.toContain(
      'Ship the payments API (until merged)',
    );
  });

  it('"start right away" with an unmet dependency is kept as autoStart and says when it starts by itself (issue 47 §5)', async () => {
    for (const [theme, viewport] of [
      ['light', DESKTOP],
      ['dark', PHONE],
    ] as const) {
      const title = `Blocked at start ${theme}`;
      await page().setViewportSize(viewport);
      await h.goto('/requirements', theme);
      await page().getByTestId('new-requirement').click();
      await page().getByTestId('create-title').fill(title);
      await page().getByTestId('depends-on-search').fill('ship');
      await page().getByTestId('depends-on-result').filter({ hasText: 'Ship the payments API' }).click();
      await page().getByLabel('Start right away').check();
      await page().getByTestId('create-submit').click();
      // No refused start: the page of the new Requirement says when it starts.
      await page()
        .locator('.toast')
        .filter({ hasText: 'It starts by itself once “Ship the payments API” is done.' })
        .waitFor()
        .catch(async (e: Error) => {
          throw new Error(`${e.message} ${await page().locator('.toasts').innerText()} ${page().url()}`);
        });
      await page().waitForURL(/\/requirements\/req_/);
      await page().getByTestId('detail-blocked-by').getByText('It starts by itself once these are met.').waitFor();
      expect(await h.overflow()).toBeLessThanOrEqual(0);
      await h.shot(`start-waits-${theme}-${viewport.width}`);
      const same = (await ok(h.ctx.manager.api.GET('/api/requirements'))).items.filter((r) => r.title === title);
      expect(same).toHaveLength(1);
      expect(same[0]).toMatchObject({ autoStart: true, status: 'todo' });
      expect(same[0].dependsOn?.map((d) => d.state)).toEqual(['pending']);
    }
    await page().setViewportSize(DESKTOP);
  });

  it('Fork with "start right away" refused: no second fork on a resubmit, the reason shown', async () => {
    await page().setViewportSize(DESKTOP);
    await h.goto(`/requirements/${docs.id}`, 'light');
    // Any refused start (here a 409 the route answers) must leave the created fork alone.
    await page().route('**/api/requirements/*/start', (route) =>
      route.fulfill({
        body: JSON.stringify({ code: 'budget_reached', message: 'refused for the test', statusCode: 409 }),
        contentType: 'application/json',
        status: 409,
      }),
    );
    try {
      await page().getByTestId('fork').click();
      await page().getByTestId('create-title').fill('Forked docs');
      await page().getByLabel('Start right away').check();
      await page().getByTestId('create-submit').click();
      await page()
        .getByTestId('create-start-error')
        .filter({ hasText: 'It did not start: refused for the test' })
        .waitFor();
      await expect(page().getByTestId('create-submit').count()).resolves.toBe(0);
      await h.shot('fork-start-refused-light-1280');
    } finally {
      await page().unroute('**/api/requirements/*/start');
    }
    const forks = (await ok(h.ctx.manager.api.GET('/api/requirements'))).items.filter((r) => r.title === 'Forked docs');
    expect(forks).toHaveLength(1);
    await page().getByTestId('open-created').click();
    await page().waitForURL(`${h.ctx.manager.origin}/requirements/${forks[0]?.id}`);
  });
});

describe('a repository without any commit in the dashboard (issue 26 §5)', () => {
  const h = harness('no-commit');
  const page = () => h.ctx.page;

  beforeAll(async () => {
    const sandbox = makeSandbox();
    git(sandbox.workspace, 'init', '-q', '-b', 'main');
    git(sandbox.workspace, 'config', 'user.email', 'person@example.com');
    git(sandbox.workspace, 'config', 'user.name', 'Person');
    fs.writeFileSync(path.join(sandbox.workspace, 'draft.txt'), 'the person’s own file\n');
    await h.start(sandbox);
  });

  afterAll(() => h.stop());

  it('badges its in-place cards, warns in the create dialog, and makes the first commit from there', async () => {
    const inPlace = await h.create('Runs in the checkout');
    expect(inPlace.isolation).toBe('in_place');
    for (const [theme, viewport] of [
      ['light', DESKTOP],
      ['dark', DESKTOP],
      ['dark', PHONE],
    ] as const) {
      await page().setViewportSize(viewport);
      await h.goto('/requirements', theme);
      const badge = page().locator(`[data-requirement-id="${inPlace.id}"]`).getByTestId('card-in-place');
      await badge.waitFor();
      await expect(badge.innerText()).resolves.toBe('in your checkout');
      await expect(badge.getAttribute('title')).resolves.toContain('the repository has no commit');
      await h.shot(`board-${theme}-${viewport.width}`);
    }

    await page().setViewportSize(DESKTOP);
    await h.goto('/requirements', 'dark');
    await page().getByTestId('new-requirement').click();
    await page().getByTestId('create-no-commit-note').waitFor();
    await page().getByTestId('create-title').fill('Another one in place');
    await page().getByTestId('create-submit').click();
    await page().getByTestId('create-result').waitFor();
    await expect(page().getByTestId('create-no-commit').innerText()).resolves.toContain(
      'runs in place: directly in your checkout',
    );
    await h.shot('created-warning-dark-1280');
    await page().getByTestId('first-commit').click();
    await page().getByTestId('first-commit-done').waitFor();
    await h.shot('first-commit-done-dark-1280');

    // An empty commit: the person's file untouched and untracked; the next Requirement gets a worktree.
    expect(git(h.ctx.sandbox.workspace, 'ls-tree', '-r', '--name-only', 'HEAD')).toBe('');
    expect(git(h.ctx.sandbox.workspace, 'status', '--porcelain')).toBe('?? draft.txt\n');
    expect((await h.create('Gets its own worktree')).isolation).toBe('worktree');

    await page().getByTestId('open-created').click();
    await page().waitForURL(/\/requirements\/req_/);
    await expect(page().getByTestId('requirement-detail').getByTestId('detail-title').innerText()).resolves.toBe(
      'Another one in place',
    );
  });

  it('a refused first commit (files staged) says why and commits nothing', async () => {
    // Its own workspace: `git init` with a file staged for the person's own first commit.
    const fresh = makeSandbox();
    try {
      git(fresh.workspace, 'init', '-q', '-b', 'main');
      fs.writeFileSync(path.join(fresh.workspace, 'a.txt'), 'a\n');
      git(fresh.workspace, 'add', 'a.txt');
      const manager = await startInProcess({ sandbox: fresh });
      try {
        await page().goto(`${manager.origin}/?token=${manager.token}`);
        await page().waitForURL(`${manager.origin}/requirements`);
        await page().getByTestId('new-requirement').click();
        await page().getByTestId('create-title').fill('Staged files here');
        await page().getByTestId('create-submit').click();
        await page().getByTestId('first-commit').click();
        await page().locator('.toast.error').filter({ hasText: 'files are staged' }).waitFor();
        await h.shot('first-commit-refused-light-1280');
        await expect(page().getByTestId('first-commit').isVisible()).resolves.toBe(true);
        expect(git(fresh.workspace, 'rev-list', '--all')).toBe('');
        expect(git(fresh.workspace, 'status', '--porcelain')).toBe('A  a.txt\n');
      } finally {
        await manager.stop();
      }
    } finally {
      fresh.cleanup();
    }
  });
});
