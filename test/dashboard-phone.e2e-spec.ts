import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Locator, Page } from 'playwright-core';

import { ARTIFACTS, type BrowserSession, launchBrowser, png, screenshot, settledBox } from './support/browser';
import { ok } from './support/api';
import { ManagerProcess, ROOT, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { ModelStub, codexEnvironment } from './support/model-stub';
import { until } from './support/wait';

// Issue 26 item 17 in Debian's Chromium against the real built server (and the real Codex CLI
// driven by the model stub for a run that stays at work): the detail page on a 390×844 phone
// (a one-row header and one row of actions, a conversation that follows new messages delivered
// over the live event stream, a placeholder without keyboard shortcuts) and, at 1280×800, a fresh
// attachment message in full view above the "agent is working" bar. Screenshots in both themes
// land in test-artifacts/dashboard-phone/ (looked at by a person; the assertions measure them).

const CODEX = path.join(ROOT, 'test', 'agent-clis', 'node_modules', '.bin', 'codex');
const LONG_JOB = `node -e "setInterval(() => {}, 1000)" am-phone-sleeper`;
const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');
const DESKTOP = { height: 800, width: 1280 };
const PHONE = { height: 844, width: 390 };
const LONG_TITLE =
  'Make the nightly export resumable after a network failure and report what was skipped in the summary e-mail';

jest.setTimeout(240_000);

// The page's globals used in `page.evaluate` callbacks, typed just enough (the test compiles without the DOM library).
interface Scroller {
  scrollTop: number;
  scrollHeight: number;
  clientHeight: number;
}
declare const document: { querySelector(s: string): Scroller | null };

describe('the Requirement page on a phone and beside a working agent (issue 26 item 17) in Chromium', () => {
  let sandbox: Sandbox;
  let stub: ModelStub;
  let manager: ManagerProcess;
  let browser: BrowserSession;
  let page: Page;

  const shot = (name: string) => screenshot(page, path.join('..', 'dashboard-phone', name));
  const messages = () => page.getByTestId('messages');
  const open = async (id: string) => {
    await page.goto(`${manager.origin}/requirements/${id}`);
    await page
      .getByTestId('requirement-detail')
      .and(page.locator(`[data-requirement-id="${id}"]`))
      .waitFor();
  };
  const create = async (title: string) =>
    await ok(
      manager.api.POST('/api/requirements', {
        body: { description: 'See the conversation.', provider: 'codex', title },
      }),
    );
  const reply = async (id: string, message: string) => {
    const res = await manager.api.POST('/api/requirements/{id}/reply', { params: { path: { id } }, body: { message } });
    expect(res.status).toBe(202);
  };
  /** How far the conversation is from its bottom, in px (0: the latest message shows). */
  const fromBottom = () =>
    page.evaluate(() => {
      const el = document.querySelector('[data-testid="messages"]')!;
      return el.scrollHeight - el.scrollTop - el.clientHeight;
    });
  const scrollTop = () => page.evaluate(() => document.querySelector('[data-testid="messages"]')!.scrollTop);
  /** Whether a box lies fully inside another (1 px of rounding allowed). */
  const inside = async (inner: Locator, outer: Locator) => {
    const a = await settledBox(inner);
    const b = await settledBox(outer);
    return (
      a.y >= b.y - 1 && a.y + a.height <= b.y + b.height + 1 && a.x >= b.x - 1 && a.x + a.width <= b.x + b.width + 1
    );
  };
  const setTheme = async (theme: 'light' | 'dark') => {
    await page.emulateMedia({ colorScheme: theme });
  };
  /** Every visible button of the actions row sits on one line. */
  const actionRows = () =>
    page
      .locator('.detail-head .actions > button:visible, .detail-head .actions > .more > button:visible')
      .evaluateAll(
        (buttons) =>
          new Set(
            buttons.map((b) =>
              Math.round((b as unknown as { getBoundingClientRect(): { top: number } }).getBoundingClientRect().top),
            ),
          ).size,
      );

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    fs.rmSync(path.join(ARTIFACTS, '..', 'dashboard-phone'), { force: true, recursive: true });
    sandbox = makeSandbox();
    stub = await ModelStub.start();
    const agentEnv = codexEnvironment(stub, fs.mkdtempSync(path.join('/var/tmp', 'am-phone-codex-')));
    manager = await startManager({
      env: { ...agentEnv, CODE_FACTORY_CODEX_EXECUTABLE: CODEX, GH_TOKEN: '', GITHUB_TOKEN: '' },
      sandbox,
    });
    browser = await launchBrowser({ viewport: PHONE });
    page = browser.page;
    await page.goto(`${manager.origin}/?token=${manager.token}`);
    await page.waitForURL(`${manager.origin}/requirements`);
    await page.getByTestId('connection').and(page.locator('.live')).waitFor();
  });

  afterAll(async () => {
    await browser?.close();
    await manager?.stop();
    await stub?.close();
    sandbox?.cleanup();
  });

  let todo = '';

  it('starts the conversation high on a phone: the title and status in one row, the actions in one row with the rest in a menu', async () => {
    todo = (await create(LONG_TITLE)).id;
    await open(todo);
    await page.getByTestId('start').waitFor();
    for (const theme of ['light', 'dark'] as const) {
      await setTheme(theme);
      await shot(`phone-todo-${theme}`);
    }
    await setTheme('light');
    const title = await settledBox(page.getByTestId('detail-title'));
    const status = await settledBox(page.getByTestId('detail-status'));
    // One row: the (truncated) title is one line high and the status sits beside it.
    expect(title.height).toBeLessThanOrEqual(28);
    expect(Math.abs(title.y + title.height / 2 - (status.y + status.height / 2))).toBeLessThanOrEqual(4);
    expect(await actionRows()).toBe(1);
    const top = (await settledBox(messages())).y;
    process.stdout.write(`phone conversation top: ${top.toFixed(0)} px of ${PHONE.height}\n`);
    expect(top).toBeLessThanOrEqual(PHONE.height * 0.25);
    // What left the row is one tap away, and works from there.
    await page.getByTestId('more-actions').click();
    await page.getByTestId('fork').waitFor();
    await page.getByTestId('delete').waitFor();
    await shot('phone-todo-menu');
    await page.getByTestId('edit').click();
    await page.getByTestId('create-title').waitFor();
    await page.keyboard.press('Escape');
    await page.getByTestId('create-dialog').waitFor({ state: 'detached' });
  });

  it('on a phone, does not mention Ctrl+Enter or dropping files in the composer; a desktop still does', async () => {
    await open(todo);
    const placeholder = () => page.getByTestId('composer-text').getAttribute('placeholder');
    await expect(placeholder()).resolves.not.toMatch(/Ctrl|drop/i);
    await expect(placeholder()).resolves.toMatch(/agent/);
    await page.setViewportSize(DESKTOP);
    await until('the desktop placeholder', async () => /Ctrl\+Enter/.test((await placeholder()) ?? ''));
    await page.setViewportSize(PHONE);
    await until('the phone placeholder', async () => !/Ctrl/.test((await placeholder()) ?? ''));
  });

  it('follows new messages from the live stream while at the bottom, and offers them without moving the view when scrolled up', async () => {
    const id = (await create('Follow the conversation')).id;
    for (let i = 1; i <= 12; i++) {
      await reply(id, `Earlier note ${i}\n\nwith a second paragraph so the conversation outgrows the screen.`);
    }
    await open(id);
    await messages().getByText('Earlier note 12').waitFor();
    await until('the conversation opened at its latest message', async () => (await fromBottom()) <= 2);

    // Each reply started a run (the stub answers "OK"); the next one is scripted, so wait for a quiet page.
    await page
      .getByTestId('detail-status')
      .and(page.locator('[data-status="waiting_confirmation"]'))
      .waitFor({ timeout: 60_000 });
    await page.getByTestId('activity').waitFor({ state: 'detached', timeout: 60_000 });
    await until('the conversation at its latest message', async () => (await fromBottom()) <= 2);

    // A message, then the agent at work (its bar takes room under the conversation), then its answer.
    stub.scriptFor(id, [{ shell: 'sleep 2' }, { text: 'The agent answers from the stream.' }]);
    await reply(id, `Fresh news from the stream 1 ${id}`);
    const fresh = messages().locator('article', { hasText: 'Fresh news from the stream 1' });
    await fresh.waitFor();
    await page.getByTestId('activity').waitFor({ timeout: 60_000 });
    await until(
      'the conversation following the new message above the activity bar',
      async () => (await fromBottom()) <= 2 && (await inside(fresh, messages())),
    );
    const answer = messages().locator('article', { hasText: 'The agent answers from the stream.' });
    await answer.waitFor({ timeout: 60_000 });
    await page.getByTestId('activity').waitFor({ state: 'detached', timeout: 60_000 });
    await until(
      'the conversation following the answer',
      async () => (await fromBottom()) <= 2 && (await inside(answer, messages())),
    );
    await shot('phone-follow-light');

    // Scrolled up to read: a new message does not pull the view away, it is offered instead.
    // Its scroll event delivered with it: a busy browser may otherwise dispatch it a frame later,
    // after the next message rendered (the page still following it) — a reader's scroll is long
    // handled by the time a message arrives.
    await messages().evaluate((el) => {
      (el as unknown as Scroller).scrollTop = 0;
      (el as unknown as { dispatchEvent(event: unknown): void }).dispatchEvent(new Event('scroll'));
    });
    await until('scrolled to the top', async () => (await scrollTop()) === 0);
    await reply(id, 'Fresh news from the stream 2');
    const jump = page.getByTestId('jump-latest');
    // The reply starts a run whose answer ("OK") can arrive in the same render: the offer counts
    // one or more new messages, never none.
    await jump.getByText(/\([1-9]\d*\)/).waitFor();
    expect(await scrollTop()).toBe(0);
    expect(await inside(jump, messages())).toBe(true);
    await setTheme('dark');
    await shot('phone-new-messages-dark');
    await setTheme('light');
    await jump.click();
    await until('jumped to the latest', async () => (await fromBottom()) <= 2);
    await expect(
      inside(messages().locator('article', { hasText: 'Fresh news from the stream 2' }), messages()),
    ).resolves.toBe(true);
    await jump.waitFor({ state: 'detached' });
  });

  it('shows a freshly sent attachment message in full above the "agent is working" bar on a desktop', async () => {
    const id = (await create('Resize the thumbnails')).id;
    stub.scriptFor(id, [{ shell: LONG_JOB }, { text: 'Done.' }]);
    await page.setViewportSize(DESKTOP);
    await open(id);
    await reply(id, `Go ahead ${id}`);
    const activity = page.getByTestId('activity');
    await activity
      .getByTestId('activity-step')
      .getByText(/am-phone-sleeper/)
      .waitFor({ timeout: 90_000 });
    // More to read than fits, queued while the agent works.
    for (let i = 1; i <= 6; i++) {
      await reply(id, `Context ${i}\n\nabout the thumbnails, long enough to fill the conversation.`);
    }
    await messages().getByText('Context 6').waitFor();

    await page
      .getByTestId('composer-file')
      .setInputFiles({ buffer: png(480, 360), mimeType: 'image/png', name: 'screen.png' });
    await page.locator('[data-testid="pending-attachment"]').waitFor();
    await page.locator('[data-testid="composer-send"]:not([disabled])').waitFor();
    await page.getByTestId('composer-text').fill('This is what it looks like now.');
    await page.getByTestId('composer-send').click();
    const sent = messages().locator('article', { hasText: 'This is what it looks like now.' });
    await sent.getByTestId('attachment-image').waitFor();
    await until('the image decoded', async () =>
      page
        .getByTestId('attachment-image')
        .last()
        .evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth > 0),
    );
    await until(
      'the attachment message fully visible above the activity bar',
      async () => {
        const box = await settledBox(sent);
        const bar = await settledBox(activity);
        return box.y + box.height <= bar.y + 1 && (await inside(sent, messages()));
      },
      5000,
    );
    for (const theme of ['light', 'dark'] as const) {
      await setTheme(theme);
      await shot(`desktop-attachment-${theme}`);
    }
    await setTheme('light');
    // The running state's header on a phone: Steer and Stop stay, still one row.
    await page.setViewportSize(PHONE);
    await page.getByTestId('steer').waitFor();
    expect(await actionRows()).toBe(1);
    expect((await settledBox(messages())).y).toBeLessThanOrEqual(PHONE.height * 0.25);
    for (const theme of ['light', 'dark'] as const) {
      await setTheme(theme);
      await shot(`phone-running-${theme}`);
    }
    await setTheme('light');
    await page.getByTestId('stop').click();
    await activity.waitFor({ state: 'detached', timeout: 60_000 });
  });

  it("keeps a failed run's longer actions (Retry, Confirm anyway) in one row on a phone, in Chinese too", async () => {
    expect((await manager.api.PATCH('/api/configuration', { body: { codexExecutable: 'codex-missing' } })).status).toBe(
      200,
    );
    try {
      const id = (await create(LONG_TITLE)).id;
      await open(id);
      await page.getByTestId('composer-text').fill('Go');
      await page.getByTestId('start').click();
      await page.getByTestId('failure-banner').waitFor({ timeout: 30_000 });
      await page.getByTestId('start').getByText('Retry').waitFor();
      await page.getByTestId('confirm').waitFor();
      for (const locale of ['en', 'zh-CN'] as const) {
        await page.getByTestId('language').selectOption(locale);
        expect(await actionRows()).toBe(1);
        const row = await settledBox(page.locator('.detail-head .actions'));
        expect(row.x + row.width).toBeLessThanOrEqual(PHONE.width);
        await expect(inside(page.getByTestId('more-actions'), page.locator('.detail-head .actions'))).resolves.toBe(
          true,
        );
        for (const theme of ['light', 'dark'] as const) {
          await setTheme(theme);
          await shot(`phone-failed-${locale}-${theme}`);
        }
      }
      await page.getByTestId('language').selectOption('en');
      await setTheme('light');
    } finally {
      await manager.api.PATCH('/api/configuration', { body: { codexExecutable: CODEX } });
    }
  });

  it('logged no console errors', () => {
    expect(browser.errors).toEqual([]);
  });
});
