import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Page } from 'playwright-core';

import type { Schemas } from '@libs/api-client';

import { ok } from './support/api';
import { type BrowserSession, launchBrowser, screenshot } from './support/browser';
import { ROOT } from './support/manager-process';
import { REAL_AGENT_CLIS } from './support/model-stub';
import { type RealAgentWorld, useRealAgentWorld } from './support/real-agent-world';
import { until } from './support/wait';

// Issue 18 §1 (and issue 16's attention count) in Chromium against the built server and the real
// Claude Code CLI driven by the model stub: a budget typed in the create dialog and changed in the
// edit dialog, usage against it on the card, and a reached budget shown in the danger colour and
// counted among what waits for a person.

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');
const CLAUDE = REAL_AGENT_CLIS.find((cli) => cli.provider === 'claude-code')!;

jest.setTimeout(180_000);

// The page's global used in `evaluate` callbacks, typed just enough (the test compiles without the DOM library).
declare function getComputedStyle(element: unknown): { color: string };

type Requirement = Schemas['RequirementResponseDto'];

describe('budgets in the dashboard (Chromium, real Claude Code)', () => {
  let world: RealAgentWorld;
  let browser: BrowserSession;
  let page: Page;
  useRealAgentWorld(CLAUDE, 'dash-budgets', (w) => (world = w));

  const origin = () => world.manager.origin;
  const get = async (id: string): Promise<Requirement> =>
    await ok(world.manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
  const card = (id: string) => page.locator(`a.card[data-requirement-id="${id}"]`);
  const attentionCount = async () => Number(await page.getByTestId('attention').getAttribute('data-count'));

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    browser = await launchBrowser();
    page = browser.page;
    await page.goto(`${origin()}/?token=${world.manager.token}`);
    await page.waitForURL(`${origin()}/requirements`);
    await page.getByTestId('connection').and(page.locator('.live')).waitFor();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('creates with a budget, shows usage against it on the card, edits it, and shows a reached budget in danger, counted as waiting', async () => {
    await page.getByTestId('new-requirement').click();
    await page.getByTestId('create-title').fill('Budgeted in the browser');
    await page.getByTestId('create-provider').selectOption('claude-code');
    await page.getByTestId('create-budget-tokens').fill('10000');
    await page.getByTestId('create-submit').click();
    await page.waitForURL(/\/requirements\/req_/);
    const id = page.url().split('/').pop()!;
    expect((await get(id)).budget).toEqual({ maxCostUsd: null, maxTokens: 10_000 });

    // The detail shows it; the edit dialog starts from it, and saving a new one sends it.
    await page.getByTestId('detail-budget').getByText('0 / 10k tokens').waitFor();
    await page.getByTestId('edit').click();
    await expect(page.getByTestId('create-budget-tokens').inputValue()).resolves.toBe('10000');
    await page.getByTestId('create-budget-tokens').fill('50');
    await page.getByTestId('create-budget-cost').fill('5');
    await page.getByTestId('create-submit').click();
    await page.getByTestId('create-dialog').waitFor({ state: 'detached' });
    await until('the edited budget', async () => {
      const budget = (await get(id)).budget;
      return budget?.maxTokens === 50 && budget.maxCostUsd === 5;
    });

    await page.goto(`${origin()}/requirements`);
    const meter = card(id).getByTestId('budget-meter');
    await meter.getByText('0 / 50 tokens · $0.00 / $5.00').waitFor();
    await expect(meter.getAttribute('data-reached')).resolves.toBe('false');
    const before = await attentionCount();

    // One answer of 120 tokens spends the 50: the run ends past the budget and pauses the Requirement.
    world.stub.scriptFor(id, [{ text: 'Answered once.' }]);
    expect(
      (
        await world.manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id } },
          body: { message: `Go ${id}` },
        })
      ).status,
    ).toBe(202);
    const reached = await until(
      'the budget reached',
      async () => {
        const r = await get(id);
        return r.budgetReachedAt !== null && r.status === 'waiting_confirmation' ? r : undefined;
      },
      120_000,
    );
    const used = reached.usage.inputTokens + reached.usage.outputTokens;
    // The answer that spent it ended the run: it succeeded and consumed its input (nothing is delivered twice).
    expect(reached.session.pendingMessageCount).toBe(0);
    expect((await ok(world.manager.api.GET('/api/runs', { params: { query: { requirementId: id } } }))).items).toEqual([
      expect.objectContaining({ status: 'succeeded' }),
    ]);

    const waitingCard = card(id);
    await waitingCard.getByTestId('budget-reached').waitFor();
    await waitingCard
      .locator('[data-testid="budget-meter"][data-reached="true"]')
      .getByText(`${used} / 50 tokens`)
      .waitFor();
    // In the danger colour: the same as the danger badge beside it (an unreached meter has the card's text colour).
    const colourOf = (testId: string) =>
      waitingCard.getByTestId(testId).evaluate((element) => getComputedStyle(element).color);
    await expect(colourOf('budget-meter')).resolves.toBe(await colourOf('budget-reached'));
    await expect(colourOf('budget-meter')).resolves.not.toBe(
      await waitingCard.locator('.title').evaluate((element) => getComputedStyle(element).color),
    );
    // The stop's "Paused" badge gives way to the budget's.
    await expect(waitingCard.getByTestId('paused').count()).resolves.toBe(0);
    await until('the attention count', async () => (await attentionCount()) === before + 1);
    await screenshot(page, 'budget-reached-card');

    await page.getByTestId('attention').click();
    await page
      .locator(`[data-testid="attention-list"] li[data-reason="budget_reached"][data-requirement-id="${id}"]`)
      .waitFor();
  });

  it("shows a parent's own usage and its tree's against its budget, live on the card and in the detail (issue 25 §4)", async () => {
    const parent = await ok(
      world.manager.api.POST('/api/requirements', {
        body: { budget: { maxTokens: 10_000 }, provider: 'claude-code', title: 'Parent with a tree' },
      }),
    );
    // A follow-up its agent proposed (here with the owner's token, as the agent API takes it): its usage is the parent's tree's.
    const child = await ok(
      world.manager.api.POST('/api/agent/requirements', {
        body: {
          description: 'The child part',
          parentRequirementId: parent.id,
          sourceSessionId: parent.session.id,
          title: 'Child part',
        },
      }),
    );
    await page.goto(`${origin()}/requirements`);
    const meter = card(parent.id).getByTestId('budget-meter');
    await meter.getByText('0 / 10k tokens').waitFor();
    await expect(meter.getByTestId('budget-own').count()).resolves.toBe(0);

    world.stub.scriptFor(child.id, [{ text: 'Child answered.' }]);
    expect(
      (
        await world.manager.api.POST('/api/requirements/{id}/start', {
          params: { path: { id: child.id } },
          body: { message: `Go ${child.id}` },
        })
      ).status,
    ).toBe(202);
    const spent = await until(
      "the parent's tree usage",
      async () => {
        const r = await get(parent.id);
        return r.treeUsage.inputTokens > 0 ? r : undefined;
      },
      120_000,
    );
    const tree = spent.treeUsage.inputTokens + spent.treeUsage.outputTokens;
    expect(spent.usage).toEqual({ costUsd: null, inputTokens: 0, outputTokens: 0 });
    // Live (the child's run end updates the parent's card): what the tree spent against the budget, and its own share.
    await meter.getByText(`${tree} / 10k tokens`).waitFor();
    await meter.getByTestId('budget-own').getByText('· own 0').waitFor();
    await screenshot(page, 'budget-tree-card');

    await page.goto(`${origin()}/requirements/${parent.id}`);
    await page.getByTestId('detail-budget').getByText(`${tree} / 10k tokens`).waitFor();
    const treeUsage = page.getByTestId('requirement-tree-usage');
    await treeUsage.waitFor();
    await expect(treeUsage.textContent()).resolves.toContain(
      `${spent.treeUsage.inputTokens} in · ${spent.treeUsage.outputTokens} out`,
    );
    await expect(page.getByTestId('requirement-usage').textContent()).resolves.toContain('0 in · 0 out');
    expect(browser.errors).toEqual([]);
  });
});
