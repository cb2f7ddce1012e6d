import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Page } from 'playwright-core';

import { type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { ok } from './support/api';
import { ROOT, type Sandbox, makeSandbox } from './support/manager-process';
import { type InProcessManager, startInProcess } from './support/in-process';
import { ModelStub, REAL_AGENT_CLIS, claudeEnvironment, codexEnvironment } from './support/model-stub';

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');
const [CODEX, CLAUDE] = REAL_AGENT_CLIS;

jest.setTimeout(120_000);

/**
 * The model pickers of the create and edit dialogs in Chromium against a real manager whose
 * catalog comes from the real Codex CLI and the Anthropic endpoint, both answered by the model
 * stub: the provider's models and each model's efforts are offered, a custom name is still
 * possible (and flagged when saved), and the open dialog follows `model_catalog.updated`.
 */
describe('dashboard model pickers in Chromium', () => {
  let sandbox: Sandbox;
  let stub: ModelStub;
  let codexHome: string;
  let manager: InProcessManager;
  let browser: BrowserSession;
  let page: Page;

  const refresh = async () => expect((await manager.api.POST('/api/models/refresh')).status).toBe(200);
  // Each option's label as the picker shows it (HTMLOptionElement.text: whitespace stripped and collapsed).
  const options = (testId: string) =>
    page
      .getByTestId(testId)
      .locator('option')
      .evaluateAll((list) => list.map((o) => (o as unknown as { text: string }).text));
  const shot = (name: string) => screenshot(page, `models-${name}`);

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    sandbox = makeSandbox();
    stub = await ModelStub.start();
    codexHome = fs.mkdtempSync(path.join('/var/tmp', 'am-dashboard-models-'));
    const agentEnv = {
      ...codexEnvironment(stub, codexHome, { modelCatalog: true }),
      ...claudeEnvironment(stub, codexHome),
    };
    stub.models.codex = [
      { efforts: ['low', 'medium'], id: 'stub-codex-fast', label: 'Stub Codex Fast' },
      { efforts: ['high', 'xhigh', 'max'], id: 'stub-codex-deep', label: 'Stub Codex Deep' },
    ];
    stub.models.anthropic = [{ id: 'claude-stub-sonnet-9', label: 'Claude Stub Sonnet 9' }];
    manager = await startInProcess({
      env: {
        ...agentEnv,
        CODE_FACTORY_CLAUDE_EXECUTABLE: CLAUDE.executable,
        CODE_FACTORY_CODEX_EXECUTABLE: CODEX.executable,
        GH_TOKEN: '',
        GITHUB_TOKEN: '',
      },
      sandbox,
    });
    await refresh();
    browser = await launchBrowser();
    page = browser.page;
    await page.goto(`${manager.origin}/?token=${manager.token}`);
    await page.waitForURL(`${manager.origin}/requirements`);
  });

  afterAll(async () => {
    await browser?.close();
    await manager?.stop();
    await stub?.close();
    sandbox?.cleanup();
  });

  it("offers the provider's models and each model's efforts, and still takes a custom model", async () => {
    await page.getByTestId('new-requirement').click();
    await page.getByTestId('create-dialog').waitFor();
    await page.getByTestId('create-model').locator('option[value="stub-codex-fast"]').waitFor({ state: 'attached' });
    expect(await options('create-model')).toEqual([
      'default',
      'Stub Codex Fast (stub-codex-fast)',
      'Stub Codex Deep (stub-codex-deep)',
      'Custom…',
    ]);
    // The default model: every effort.
    expect(await options('create-effort')).toEqual(['default', 'low', 'medium', 'high', 'xhigh', 'max']);
    await page.getByTestId('create-model').selectOption('stub-codex-deep');
    expect(await options('create-effort')).toEqual(['default', 'high', 'xhigh', 'max']);
    await page.getByTestId('create-effort').selectOption('xhigh');
    await page.getByTestId('create-title').fill('Deep model');
    await page.getByTestId('create-model').focus();
    await shot('create-codex');

    await page.getByTestId('create-provider').selectOption('claude-code');
    const claude = await options('create-model');
    expect(claude).toEqual(
      expect.arrayContaining([
        'Sonnet (latest) (sonnet)',
        'Sonnet, 1M context (sonnet[1m])',
        'Claude Stub Sonnet 9 (claude-stub-sonnet-9)',
        'Custom…',
      ]),
    );
    expect(claude.some((label) => label.includes('stub-codex'))).toBe(false);
    // The Codex model is not Claude's: it stays, as a custom name, rather than being silently dropped.
    await expect(page.getByTestId('create-model-custom').inputValue()).resolves.toBe('stub-codex-deep');
    await page.getByTestId('create-model').selectOption('sonnet[1m]');
    await expect(page.getByTestId('create-model-custom').count()).resolves.toBe(0);

    await page.getByTestId('create-model').selectOption({ label: 'Custom…' });
    await page.getByTestId('create-model-custom').fill('my-own-model');
    await shot('create-custom');
    await page.getByTestId('create-submit').click();
    await page.getByText('The model my-own-model is not in the model list').waitFor();
    await shot('unknown-model-toast');
    await page.waitForURL(/\/requirements\/req_/);
    const id = page.url().split('/').pop()!;
    expect(await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }))).toMatchObject({
      model: 'my-own-model',
      provider: 'claude-code',
      reasoningEffort: 'xhigh',
      title: 'Deep model',
    });
  });

  it('edits the model and effort with the pickers, showing a model the catalog does not list as custom', async () => {
    const listed = await ok(
      manager.api.POST('/api/requirements', {
        body: { model: 'stub-codex-fast', provider: 'codex', reasoningEffort: 'low', title: 'Listed model' },
      }),
    );
    await page.goto(`${manager.origin}/requirements/${listed.id}`);
    await page.getByTestId('edit').click();
    await page.getByTestId('create-model').locator('option[value="stub-codex-fast"]').waitFor({ state: 'attached' });
    await expect(page.getByTestId('create-model').inputValue()).resolves.toBe('stub-codex-fast');
    await expect(page.getByTestId('create-effort').inputValue()).resolves.toBe('low');
    expect(await options('create-effort')).toEqual(['default', 'low', 'medium']);
    await page.getByTestId('create-model').selectOption('stub-codex-deep');
    // The effort chosen before is kept on offer (the server would flag it), not dropped silently.
    expect(await options('create-effort')).toEqual(['default', 'high', 'xhigh', 'max', 'low']);
    await page.getByTestId('create-effort').selectOption('max');
    await shot('edit');
    await page.getByTestId('create-submit').click();
    await page.getByTestId('create-dialog').waitFor({ state: 'detached' });
    expect(await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: listed.id } } }))).toMatchObject({
      model: 'stub-codex-deep',
      reasoningEffort: 'max',
    });

    const legacy = await ok(
      manager.api.POST('/api/requirements', {
        body: { model: 'legacy-model', provider: 'codex', title: 'Legacy model' },
      }),
    );
    await page.goto(`${manager.origin}/requirements/${legacy.id}`);
    await page.getByTestId('edit').click();
    await expect(page.getByTestId('create-model-custom').inputValue()).resolves.toBe('legacy-model');
    await expect(page.getByTestId('create-model').inputValue()).resolves.toBe('__custom__');
    await page.keyboard.press('Escape');
  });

  it('follows model_catalog.updated in an open dialog, and says when the list may be out of date', async () => {
    await page.goto(`${manager.origin}/requirements`);
    await page.getByTestId('new-requirement').click();
    await page.getByTestId('create-model').locator('option[value="stub-codex-fast"]').waitFor({ state: 'attached' });
    await expect(page.getByTestId('model-catalog-stale').count()).resolves.toBe(0);

    stub.models.codex = [...stub.models.codex, { efforts: ['medium'], id: 'stub-codex-new', label: 'Stub Codex New' }];
    await refresh();
    await page.getByTestId('create-model').locator('option[value="stub-codex-new"]').waitFor({ state: 'attached' });

    stub.models.error = { message: 'models endpoint down', status: 503 };
    // Codex would answer from its own cache of the list (models_cache.json): as if it had expired.
    fs.rmSync(path.join(codexHome, 'models_cache.json'), { force: true });
    await refresh();
    await page.getByTestId('model-catalog-stale').waitFor();
    await expect(page.getByTestId('model-catalog-stale').textContent()).resolves.toBe('List may be out of date');
    await expect(page.getByTestId('model-catalog-stale').getAttribute('title')).resolves.toMatch(/listed no models/);
    // The last good list is still offered.
    expect(await options('create-model')).toContain('Stub Codex New (stub-codex-new)');
    await shot('stale');
    expect(browser.errors).toEqual([]);
  });
});
