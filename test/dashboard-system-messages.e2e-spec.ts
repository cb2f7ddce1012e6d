import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Page } from 'playwright-core';

import { ARTIFACTS, type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { createRequirement, initRepository, reply, settled, sh, startRun, WORKTREE_AGENT } from './support/git-repo';
import { ok } from './support/api';
import { ManagerProcess, ROOT, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { until } from './support/wait';

// Issue 26 §8 and §13, against the real built server and Debian's Chromium: what Agent Manager
// writes into a conversation carries a code and arguments (HTTP), which the dashboard writes in the
// reader's language (zh-CN here, and English), with the message's source in words, never an
// internal trigger id; a manager stop during a run leaves a message saying so, and the input it
// did not deliver is marked pending. Screenshots land in test-artifacts/dashboard-system-messages/.

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');
const AGENTS = {
  CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
  CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
  GH_TOKEN: '',
  GITHUB_TOKEN: '',
};
const DESKTOP = { height: 800, width: 1280 };
const PHONE = { height: 844, width: 390 };

jest.setTimeout(240_000);

declare const document: { documentElement: { dataset: Record<string, string | undefined> } };
declare const localStorage: { setItem(key: string, value: string): void };

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('system messages in the reader’s language, and a manager stop during a run (issue 26 §8, §13)', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess;
  let browser: BrowserSession | undefined;
  let page: Page;

  const shot = (name: string) => screenshot(page, path.join('..', 'dashboard-system-messages', name));
  const messages = async (id: string): Promise<Json[]> =>
    (await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id }, query: { limit: 200 } } })))
      .items;
  const open = async (id: string) => {
    await page.goto(`${manager.origin}/requirements/${id}`);
    await page
      .getByTestId('requirement-detail')
      .and(page.locator(`[data-requirement-id="${id}"]`))
      .waitFor();
  };
  const browse = async (language: 'en' | 'zh-CN', theme: 'light' | 'dark' = 'light') => {
    await browser?.close();
    browser = await launchBrowser({ colorScheme: theme, locale: language, viewport: DESKTOP });
    page = browser.page;
    await page.goto(`${manager.origin}/?token=${manager.token}`);
    await page.waitForURL(`${manager.origin}/requirements`);
    await page.evaluate(
      ([l, t]) => {
        localStorage.setItem('am.language', l);
        localStorage.setItem('am.theme', t);
      },
      [language, theme],
    );
    await page.reload();
    await expect(page.evaluate(() => document.documentElement.dataset['theme'])).resolves.toBe(theme);
  };
  const running = (id: string) =>
    until(`a running run of ${id}`, async () => {
      const runs = (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: id } } }))).items;
      return runs.find((r) => r.status === 'running');
    });

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    fs.rmSync(path.join(ARTIFACTS, '..', 'dashboard-system-messages'), { force: true, recursive: true });
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n' });
    manager = await startManager({ env: AGENTS, sandbox });
  });

  afterAll(async () => {
    await browser?.close();
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('says in the conversation that a manager stop cut a run short, with its code, and marks the undelivered input pending (item 8)', async () => {
    const graceful = await createRequirement(manager, { title: 'Cut by a graceful stop' });
    await startRun(manager, graceful.id, `Take your time ${sh('sleep 60')}`);
    await running(graceful.id);
    await reply(manager, graceful.id, 'One more thing, queued before the stop');
    await manager.stop();
    manager = await startManager({ env: AGENTS, sandbox });

    const crashed = await createRequirement(manager, { title: 'Cut by kill -9' });
    await startRun(manager, crashed.id, `Take your time ${sh('sleep 60')}`);
    const crashedRun = await running(crashed.id);
    await manager.kill9();
    manager = await startManager({ env: AGENTS, sandbox });

    for (const req of [graceful, crashed]) {
      const stopped = (await messages(req.id)).filter((m) => m.author === 'system');
      expect(stopped).toEqual([
        expect.objectContaining({
          args: {},
          body: 'Agent Manager stopped during this run; its input is pending. Nothing was consumed: the next start delivers the same input.',
          code: 'run.manager_stopped',
          deliverToRd: false,
        }),
      ]);
      const detail = await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: req.id } } }));
      expect(detail.session.lastConsumedMessageSequence).toBe(0);
    }
    expect((await messages(crashed.id)).find((m) => m.author === 'system')?.runId).toBe(crashedRun.id);

    for (const [language, text, pending] of [
      ['zh-CN', 'Agent Manager 在本次运行期间停止了；其输入仍待处理', '待处理'],
      ['en', 'Agent Manager stopped during this run; its input is pending.', 'pending'],
    ] as const) {
      await browse(language);
      await open(graceful.id);
      await page.locator('[data-testid="system-text"][data-code="run.manager_stopped"]').getByText(text).waitFor();
      // Both the interrupted start and the reply queued behind it wait for the next start.
      const humans = page.locator('article.message.human');
      await expect(humans.count()).resolves.toBe(2);
      for (const i of [0, 1]) {
        await expect(humans.nth(i).getByTestId('pending-badge').textContent()).resolves.toBe(pending);
      }
      await shot(`manager-stopped-${language}`);
    }
    await browse('zh-CN', 'dark');
    await open(crashed.id);
    await page.locator('[data-code="run.manager_stopped"]').waitFor();
    await page.locator('article.message.human').getByTestId('pending-badge').waitFor();
    await shot('manager-stopped-zh-CN-dark');

    // Started again, the same input is delivered and nothing is pending any more (the agent runs
    // the prompt's last command: this one, not the sleep).
    await startRun(manager, graceful.id, `Go on ${sh('true')}`);
    await settled(manager, graceful.id, 2);
    await browse('en');
    await open(graceful.id);
    await page.getByText('Done.').last().waitFor();
    await expect(page.getByTestId('pending-badge').count()).resolves.toBe(0);
  });

  it('renders budget and dependency messages from their codes in zh-CN, names the source in words, and says Token, not 令牌 (item 13)', async () => {
    // A budget below what one run reports (the agent reports 12 tokens): reached after the run.
    const capped = await createRequirement(manager, { budget: { maxCostUsd: null, maxTokens: 5 }, title: 'Capped' });
    await startRun(manager, capped.id, 'Go');
    await settled(manager, capped.id, 1);
    const budget = await until('the budget message', async () =>
      (await messages(capped.id)).find((m) => m.code === 'budget.reached'),
    );
    expect(budget).toMatchObject({ args: { below: 0, maxTokens: 5, runStopped: false, tokens: 12 }, author: 'system' });
    expect(budget.body).toMatch(/^Budget reached: 12 of 5 tokens\./);

    // A dependency met: its message comes from the dependency trigger.
    const first = await createRequirement(manager, { title: 'Ship the schema' });
    const second = await createRequirement(manager, {
      dependsOn: [{ requirementId: first.id, until: 'done' }],
      title: 'Use the schema',
    });
    await startRun(manager, first.id, 'Go');
    await settled(manager, first.id, 1);
    expect(
      (await manager.api.POST('/api/requirements/{id}/confirm', { params: { path: { id: first.id } } })).status,
    ).toBe(200);
    const met = await until('the dependency message', async () =>
      (await messages(second.id)).find((m) => m.code === 'dependency.met'),
    );
    expect(met).toMatchObject({
      args: { merged: null, requirementId: first.id, title: 'Ship the schema' },
      source: 'dependency',
      triggerId: 'requirement.dependency',
    });

    for (const theme of ['light', 'dark'] as const) {
      await browse('zh-CN', theme);
      await open(capped.id);
      const budgetText = page.locator('[data-testid="system-text"][data-code="budget.reached"]');
      await expect(budgetText.textContent()).resolves.toContain('已达到预算：12 / 5 Token。');
      await shot(`budget-zh-CN-${theme}`);
      const body = await page.locator('body').textContent();
      expect(body).not.toContain('令牌');
      expect(body).not.toContain('Budget reached');

      await open(second.id);
      await expect(page.locator('[data-code="dependency.met"]').textContent()).resolves.toContain(
        '依赖已满足：「Ship the schema」已确认完成。',
      );
      await expect(page.getByTestId('message-source').textContent()).resolves.toBe('来自 依赖');
      await shot(`dependency-zh-CN-${theme}`);
    }
    await page.setViewportSize(PHONE);
    await page.locator('[data-code="dependency.met"]').waitFor();
    await shot('dependency-zh-CN-dark-phone');

    await browse('en');
    await open(second.id);
    await expect(page.getByTestId('message-source').textContent()).resolves.toBe('via a dependency');
    await expect(page.locator('[data-code="dependency.met"]').textContent()).resolves.toContain(
      'Dependency met: "Ship the schema" was confirmed done.',
    );
  });
});

describe('doctor findings in the reader’s language (issue 26 §13)', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess;
  let browser: BrowserSession | undefined;

  beforeAll(async () => {
    sandbox = makeSandbox();
    manager = await startManager({ env: { CODE_FACTORY_CODEX_EXECUTABLE: '/nonexistent/bin/codex' }, sandbox });
  });

  afterAll(async () => {
    await browser?.close();
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('answers each finding with a code and arguments, and the setup panel writes them in zh-CN (light, dark, phone)', async () => {
    const report = await ok(manager.api.GET('/api/doctor'));
    const byId = Object.fromEntries((report.checks as Json[]).map((c) => [c.id, c]));
    expect(byId.codex).toMatchObject({
      args: { path: '/nonexistent/bin/codex', setting: 'codexExecutable' },
      code: 'cli.path_missing',
      status: 'fail',
    });
    expect(byId.port).toMatchObject({ args: { url: manager.origin }, code: 'port.serving' });
    for (const check of report.checks as Json[]) {
      expect(check.code).toMatch(/^[a-z]+\.[a-z_]+$/);
    }

    for (const [theme, viewport] of [
      ['light', DESKTOP],
      ['dark', DESKTOP],
      ['dark', PHONE],
    ] as const) {
      await browser?.close();
      browser = await launchBrowser({ colorScheme: theme, locale: 'zh-CN', viewport });
      const { page } = browser;
      await page.goto(`${manager.origin}/?token=${manager.token}`);
      await page.waitForURL(`${manager.origin}/requirements`);
      await page.evaluate((t) => {
        localStorage.setItem('am.language', 'zh-CN');
        localStorage.setItem('am.theme', t);
      }, theme);
      await page.reload();
      const codex = page.getByTestId('setup-panel').locator('[data-check="codex"]');
      await codex.waitFor();
      await expect(codex.getByTestId('setup-detail').textContent()).resolves.toBe(
        '/nonexistent/bin/codex（codexExecutable）不存在：使用它的运行会失败',
      );
      await expect(codex.getByTestId('setup-fix').textContent()).resolves.toContain(
        '把 codexExecutable 设为该 CLI 的真实路径',
      );
      const panel = (await page.getByTestId('setup-panel').textContent()) ?? '';
      expect(panel).not.toContain('does not exist');
      await page.getByTestId('setup-panel').locator('details.setup-passed summary').click();
      await expect(page.locator('[data-check="port"] [data-testid="setup-detail"]').textContent()).resolves.toBe(
        `正在 ${manager.origin} 上服务`,
      );
      await screenshot(page, path.join('..', 'dashboard-system-messages', `doctor-zh-CN-${theme}-${viewport.width}`));
    }
  });
});
