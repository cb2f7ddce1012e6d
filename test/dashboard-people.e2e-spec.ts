import * as fs from 'node:fs';
import * as path from 'node:path';

import { ARTIFACTS, type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { createRequirement, reply } from './support/git-repo';
import { ok } from './support/api';
import { startInProcess } from './support/in-process';
import { ROOT, Sandbox, type TestManager, makeSandbox } from './support/manager-process';

// Issue 29 (team mode), against a real manager in the test's process and Debian's Chromium: on a board several
// people's managers share, a person's message in the conversation shows who wrote it (the name
// the manager acts under), not a bare "You". Screenshot in test-artifacts/dashboard-people/.

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');

jest.setTimeout(120_000);

describe('dashboard: a person’s message shows their name, and settings say who you are (issue 29)', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let browser: BrowserSession | undefined;

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    sandbox = makeSandbox();
    manager = await startInProcess({
      env: { CODE_FACTORY_PERSON_EMAIL: 'grace@example.com', CODE_FACTORY_PERSON_NAME: 'Grace Hopper' },
      sandbox,
    });
  });

  afterAll(async () => {
    await browser?.close();
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('names the author of a reply in the conversation', async () => {
    const you = (await ok(manager.api.GET('/api/workspace'))).person;
    const requirement = await createRequirement(manager, { title: 'Whose words' });
    await reply(manager, requirement.id, 'Written by Grace');

    browser = await launchBrowser({ locale: 'en' });
    const { page } = browser;
    await page.goto(`${manager.origin}/?token=${manager.token}`);
    await page.waitForURL(`${manager.origin}/requirements`);
    await page.goto(`${manager.origin}/requirements/${requirement.id}`);
    const message = page.locator('article.message.human').filter({ hasText: 'Written by Grace' });
    await message.waitFor();
    const author = message.getByTestId('message-author');
    await expect(author.textContent()).resolves.toBe('Grace Hopper');
    await expect(author.getAttribute('data-author-id')).resolves.toBe(you.id);
    await screenshot(page, path.join('..', 'dashboard-people', 'reply-author'));
    expect(fs.existsSync(path.join(ARTIFACTS, '..', 'dashboard-people'))).toBe(true);

    // Settings say who this manager's events and messages name, and where that name came from.
    await page.getByTestId('settings').click();
    const line = page.getByTestId('settings-dialog').getByTestId('settings-you');
    await line.waitFor();
    await expect(line.textContent()).resolves.toContain(
      'You act as Grace Hopper <grace@example.com> · set in personName',
    );
    await expect(line.getAttribute('data-person-id')).resolves.toBe(you.id);
    await screenshot(page, path.join('..', 'dashboard-people', 'settings-you'));
  });
});
