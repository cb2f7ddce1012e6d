import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Page } from 'playwright-core';

import { ARTIFACTS, type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { createRequirement, initRepository, WORKTREE_AGENT } from './support/git-repo';
import { send } from './support/http';
import { ManagerProcess, ROOT, Sandbox, makeSandbox, startManager } from './support/manager-process';

// Issue 26 ("daily use, tried as a new user would") in Debian's Chromium against the real built
// server, with the synthetic worktree agent: each item is walked through the page as a person
// would, in both themes and at a phone width where it is visual. Screenshots land in
// test-artifacts/dashboard-newcomer/ (looked at by a person; the assertions measure what they show).

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');
const AGENTS = { CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT, CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT, GH_TOKEN: '', GITHUB_TOKEN: '' };
const DESKTOP = { height: 800, width: 1280 };

jest.setTimeout(180_000);

describe('dashboard for a new user (issue 26) in Chromium', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess;
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
  const errorToast = () => page.locator('.toast.error');

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    fs.rmSync(path.join(ARTIFACTS, '..', 'dashboard-newcomer'), { force: true, recursive: true });
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\nfirst line\nold line\n' });
    manager = await startManager({ env: AGENTS, sandbox });
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
    const blocked = await createRequirement(manager, { dependsOn: [{ requirementId: dependency.id, until: 'done' }], title: 'Use the API' });
    await open(blocked.id);
    const composer = page.getByTestId('composer-text');
    const typed = 'Use the new endpoint, and keep the old one for a release.';
    await composer.fill(typed);
    await page.getByTestId('start').click();
    await errorToast()
      .getByText(/^409 · .*\(until done\)/)
      .waitFor();
    await expect(composer.inputValue()).resolves.toBe(typed);
    await shot('refused-start-keeps-draft');

    // A reply that fails (the server answers 503 here) keeps the draft, too.
    await page.route('**/api/requirements/*/reply', (route) => route.fulfill({ json: { code: 'unavailable', message: 'Try again', statusCode: 503 }, status: 503 }));
    await page.getByTestId('composer-send').click();
    await errorToast().getByText('503 · Try again').waitFor();
    await expect(composer.inputValue()).resolves.toBe(typed);

    // A refused edit leaves the dialog open with the new title in it.
    await page.route('**/api/requirements/*', (route) =>
      route.request().method() === 'PATCH' ? route.fulfill({ json: { code: 'conflict', message: 'Edited elsewhere', statusCode: 409 }, status: 409 }) : route.fallback(),
    );
    await page.getByTestId('edit').click();
    await page.getByTestId('create-title').fill('Use the API, edited');
    await page.getByTestId('create-submit').click();
    await errorToast().getByText('409 · Edited elsewhere').waitFor();
    await expect(page.getByTestId('create-title').inputValue()).resolves.toBe('Use the API, edited');
    page.once('dialog', (d) => void d.accept());
    await page.keyboard.press('Escape');
    await page.getByTestId('create-dialog').waitFor({ state: 'detached' });
    await page.unrouteAll({ behavior: 'ignoreErrors' });

    // Once the dependency is out of the way the same Start takes the draft, and only then is it cleared.
    expect((await send(manager.origin, 'PUT', `/api/requirements/${blocked.id}/dependencies`, { dependsOn: [] })).status).toBe(200);
    await page.getByTestId('start').click();
    await page.getByTestId('messages').getByText(typed).waitFor();
    await expect(composer.inputValue()).resolves.toBe('');
  });
});
