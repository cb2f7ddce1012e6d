import * as fs from 'node:fs';
import * as path from 'node:path';

import { type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { WORKTREE_AGENT, createRequirement, initRepository, say, settled, startRun } from './support/git-repo';
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
  documentElement: { scrollWidth: number };
  querySelector(s: string): { naturalWidth: number } | null;
};

/**
 * Issue 47 §4 in two Chromium profiles: the person's desk pairs a phone from Settings → Devices
 * (a one-time link and its QR code); the phone, at 390 px and with no token, opens the link,
 * pairs, lands on Needs you and answers the agent's question there; the desk sees the phone
 * listed and revokes it; the phone is then logged out at its next request, told why.
 */
describe('pairing a phone in Chromium', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let desk: BrowserSession;
  let phone: BrowserSession;
  let asks = '';
  let link = '';

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n' });
    manager = await startInProcess({ env: AGENTS, sandbox });
    asks = (await createRequirement(manager, { title: 'Asks a question' })).id;
    await startRun(manager, asks, say('Should the cache live in Redis?'));
    await settled(manager, asks, 1);
    desk = await launchBrowser();
    phone = await launchBrowser({ viewport: PHONE });
    await desk.page.goto(`${manager.origin}/?token=${manager.token}`);
    await desk.page.waitForURL(`${manager.origin}/requirements`);
  });

  afterAll(async () => {
    await phone?.close();
    await desk?.close();
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('shows a one-time link and its QR code in Settings → Devices', async () => {
    await desk.page.getByTestId('settings').click();
    const panel = desk.page.getByTestId('devices-panel');
    await panel.getByTestId('devices-none').waitFor();
    await panel.getByTestId('pair-device').click();
    const url = panel.getByTestId('pairing-url');
    await url.waitFor();
    link = await url.inputValue();
    expect(link).toMatch(new RegExp(`^${manager.origin}/pair/[A-Za-z0-9_-]{43}$`));
    await until('the QR code drawn', async () =>
      (await desk.page.evaluate(() => document.querySelector('[data-testid="pairing"] img')?.naturalWidth ?? 0)) > 0
        ? true
        : undefined,
    );
    await expect(panel.getByTestId('pairing-reachability').textContent()).resolves.toMatch(/loopback/);
    await screenshot(desk.page, 'devices-pairing');
  });

  it('pairs the phone, which lands on Needs you at 390 px and answers the question there', async () => {
    // No token anywhere in this profile: only the link.
    await phone.page.goto(link);
    await phone.page.getByLabel('Name of this device').fill('Pocket');
    await phone.page.getByRole('button', { name: 'Pair' }).click();
    await phone.page.waitForURL(`${manager.origin}/attention`);
    const row = (reason: string) =>
      phone.page.locator(`[data-testid="attention-list"] li[data-requirement-id="${asks}"][data-reason="${reason}"]`);
    await row('waiting_reply').getByText('Should the cache live in Redis?').waitFor();
    expect(await phone.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await screenshot(phone.page, 'devices-phone-needs-you');
    await row('waiting_reply').getByTestId('attention-reply').click();
    await phone.page.getByTestId('attention-reply-text').fill(`Yes, Redis. ${say('Redis it is.')}`);
    await phone.page.keyboard.press('Control+Enter');
    await row('confirm_done').getByText('Redis it is.').waitFor({ timeout: 60_000 });
    // The desk's code goes away on its own once used, and the phone is listed.
    const panel = desk.page.getByTestId('devices-panel');
    await panel.locator('[data-testid="device"]', { hasText: 'Pocket' }).waitFor({ timeout: 10_000 });
    await expect(panel.getByTestId('pairing').count()).resolves.toBe(0);
    expect(phone.errors).toEqual([]);
  });

  it('revokes the phone from the desk: its next request logs it out, saying why', async () => {
    const panel = desk.page.getByTestId('devices-panel');
    await panel
      .locator('[data-testid="device"]', { hasText: 'Pocket' })
      .getByRole('button', { name: 'Revoke Pocket' })
      .click();
    await panel.getByTestId('devices-none').waitFor();
    await phone.page.reload();
    await phone.page.getByTestId('device-revoked').waitFor();
    await screenshot(phone.page, 'devices-revoked');
    // The link stays spent.
    const again = await phone.page.goto(link);
    expect(again?.status()).toBe(410);
  });
});
