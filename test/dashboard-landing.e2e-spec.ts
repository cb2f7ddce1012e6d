import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Locator, Page } from 'playwright-core';

import type { Schemas } from '@libs/api-client';

import { ok } from './support/api';
import { ARTIFACTS, type BrowserSession, launchBrowser, screenshot, settledBox } from './support/browser';
import {
  createRequirement,
  git,
  initRepository,
  runsOf,
  settled,
  sh,
  startRun,
  WORKTREE_AGENT,
} from './support/git-repo';
import { startInProcess } from './support/in-process';
import { ROOT, Sandbox, type TestManager, makeSandbox } from './support/manager-process';
import { until } from './support/wait';

/** Waits for an element's text to become `expected` (a render after a click lands a frame later, later still under load). */
async function untilText(locator: Locator, expected: string): Promise<void> {
  await until(
    `the text "${expected}"`,
    async () => (await locator.innerText()) === expected || undefined,
    10_000,
  ).catch(async () => {
    expect(await locator.innerText()).toBe(expected);
  });
}

// Issue 28 §4 (and the dashboard side of §2 and §3) in Debian's Chromium against the real built
// server, a real git repository and the synthetic worktree agent (a message `sh:<base64>` runs in
// its worktree): the conflict radar on the cards and in the Changes tab, the land menu (a squash
// that lands, refusals that show their files and keep every choice, commit-pending), and the merge
// queue on the board, reordered by dragging and by its arrows — in both themes and at 390 px.
// Screenshots land in test-artifacts/dashboard-landing/.

const INDEX = path.join(ROOT, 'dist', 'dashboard', 'browser', 'index.html');
const AGENTS = {
  CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT,
  CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT,
  GH_TOKEN: '',
  GITHUB_TOKEN: '',
};
const DESKTOP = { height: 800, width: 1280 };
const PHONE = { height: 844, width: 390 };
const VIEWS = [
  ['light', DESKTOP],
  ['dark', DESKTOP],
  ['light', PHONE],
  ['dark', PHONE],
] as const;

jest.setTimeout(300_000);

declare const document: {
  documentElement: { dataset: Record<string, string | undefined>; scrollWidth: number; clientWidth: number };
  activeElement: {
    closest(selector: string): { getAttribute(name: string): string | null } | null;
    getAttribute(name: string): string | null;
  } | null;
};
declare const localStorage: { setItem(key: string, value: string): void };

type Requirement = Schemas['RequirementResponseDto'];

const ALPHA = 'Alpha rewrites the shared files';
const BRAVO = 'Bravo edits shared and notes';
const CHARLIE = 'Charlie edits the config';
const DELTA = 'Delta leaves its work uncommitted';

describe('landing in the dashboard: radar, land menu, merge queue (issue 28 §4)', () => {
  let sandbox: Sandbox;
  let manager: TestManager;
  let browser: BrowserSession;
  let page: Page;
  const ids = { alpha: '', bravo: '', charlie: '', delta: '' };

  const shot = (name: string) => screenshot(page, path.join('..', 'dashboard-landing', name));
  const get = (id: string): Promise<Requirement> =>
    ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id } } }));
  const queueOrder = async () => (await ok(manager.api.GET('/api/landing-queue'))).items.map((i) => i.requirementId);
  const overflow = () =>
    page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  const card = (id: string) => page.locator(`a.card[data-requirement-id="${id}"]`);

  /** Sets the theme (stored, as the settings do) and the viewport, and loads `url` in them. */
  const goto = async (
    url: string,
    theme: 'light' | 'dark' = 'light',
    viewport: { width: number; height: number } = DESKTOP,
  ) => {
    await page.setViewportSize(viewport);
    await page.goto(`${manager.origin}${url}`);
    await page.evaluate((c) => localStorage.setItem('am.theme', c), theme);
    await page.reload();
    await expect(page.evaluate(() => document.documentElement.dataset['theme'])).resolves.toBe(theme);
  };
  /** The element is on screen and inside the viewport's width (nothing of it cut off or scrolled sideways). */
  const fits = async (locator: Locator) => {
    const box = await settledBox(locator);
    const width = page.viewportSize()?.width ?? 0;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(width + 0.5);
    expect(await overflow()).toBeLessThanOrEqual(0);
  };
  /** The detail page of `id`, with its land menu open (behind ⋯ on a phone). */
  const openLand = async (id: string, theme: 'light' | 'dark' = 'light', viewport = DESKTOP) => {
    await goto(`/requirements/${id}`, theme, viewport);
    await page
      .getByTestId('requirement-detail')
      .and(page.locator(`[data-requirement-id="${id}"]`))
      .waitFor();
    if (viewport === PHONE) {
      await page.getByTestId('more-actions').click();
    }
    await page.getByTestId('land-toggle').click();
    await page.getByTestId('land-panel').waitFor();
  };
  /** All of a Requirement's RD runs finished (a system message may have started one). */
  const rdRuns = async (id: string) => (await runsOf(manager, id)).filter((r) => r.role === 'rd');
  const resting = (id: string, runs = 1) =>
    until(
      `${runs} finished runs of ${id}`,
      async () => {
        const all = await rdRuns(id);
        return (
          all.length >= runs && all.every((r) => r.status !== 'running') && (await get(id)).session.state !== 'running'
        );
      },
      60_000,
      100,
    );

  beforeAll(async () => {
    if (!fs.existsSync(INDEX)) {
      throw new Error('dist/dashboard is missing: run `npm run build:dashboard` first');
    }
    fs.rmSync(path.join(ARTIFACTS, '..', 'dashboard-landing'), { force: true, recursive: true });
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, {
      'config.txt': 'debug = false\n',
      'notes.txt': 'notes\n',
      'README.md': '# repo\n',
      'shared.txt': 'line 1\nline 2\n',
    });
    manager = await startInProcess({ env: AGENTS, sandbox });
    // Alpha conflicts with Bravo in two files and with Charlie in one; Bravo and Charlie touch
    // different files; Delta's work stays uncommitted in its worktree.
    const work = {
      alpha: [
        ALPHA,
        "printf 'alpha\\n' > shared.txt && printf 'alpha notes\\n' > notes.txt && printf 'debug = alpha\\n' > config.txt && git commit -qam alpha",
      ],
      bravo: [
        BRAVO,
        "printf 'bravo\\n' > shared.txt && printf 'bravo notes\\n' > notes.txt && printf 'b\\n' > bravo-only.txt && git add -A && git commit -qm bravo",
      ],
      charlie: [CHARLIE, "printf 'debug = charlie\\n' > config.txt && git commit -qam charlie"],
      delta: [DELTA, "printf 'delta\\n' > delta.txt"],
    } as const;
    for (const [key, [title, command]] of Object.entries(work) as [keyof typeof ids, readonly [string, string]][]) {
      ids[key] = (await createRequirement(manager, { title })).id;
      await startRun(manager, ids[key], sh(command));
    }
    for (const id of Object.values(ids)) {
      await settled(manager, id, 1);
    }
    await until(
      'the radar to find the three pairs',
      async () => {
        const [alpha, bravo, charlie, delta] = await Promise.all([
          get(ids.alpha),
          get(ids.bravo),
          get(ids.charlie),
          get(ids.delta),
        ]);
        return (
          alpha.landing.conflictsWith.length === 2 &&
          bravo.landing.conflictsWith.length === 1 &&
          charlie.landing.conflictsWith.length === 1 &&
          delta.landing.mergesCleanly === true
        );
      },
      30_000,
      100,
    );
    browser = await launchBrowser({ viewport: DESKTOP });
    page = browser.page;
    await page.goto(`${manager.origin}/?token=${manager.token}`);
    await page.waitForURL(`${manager.origin}/requirements`);
  });

  afterAll(async () => {
    await browser?.close();
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('cards show which Requirements conflict, by title and file count, in both themes and on a phone', async () => {
    for (const [theme, viewport] of VIEWS) {
      await goto('/requirements', theme, viewport);
      const bravo = card(ids.bravo).getByTestId('card-radar-pair');
      await expect(bravo.innerText()).resolves.toBe(`conflicts with ${ALPHA} (2 files)`);
      await expect(bravo.getAttribute('title')).resolves.toBe('notes.txt, shared.txt');
      await expect(card(ids.charlie).getByTestId('card-radar-pair').innerText()).resolves.toBe(
        `conflicts with ${ALPHA} (1 file)`,
      );
      await expect(card(ids.alpha).getByTestId('card-radar-pairs').innerText()).resolves.toBe(
        'conflicts with 2 Requirements',
      );
      await expect(card(ids.delta).locator('[data-testid^="card-radar-"]').count()).resolves.toBe(0);
      // The chip wraps inside its card rather than run past it.
      const chip = await settledBox(bravo);
      const box = await settledBox(card(ids.bravo));
      expect(chip.x + chip.width).toBeLessThanOrEqual(box.x + box.width + 0.5);
      await fits(card(ids.bravo));
      await shot(`board-radar-${theme}-${viewport.width}`);
    }
  });

  it('the Changes tab marks the files that conflict, naming the other Requirement', async () => {
    await goto(`/requirements/${ids.bravo}`);
    await page.getByTestId('tab-changes').click();
    const file = (p: string) => page.locator(`[data-testid="changed-file"][data-path="${p}"]`);
    await file('bravo-only.txt').waitFor();
    for (const p of ['shared.txt', 'notes.txt']) {
      const mark = file(p).getByTestId('file-conflict-with');
      await expect(mark.innerText()).resolves.toBe(`conflicts with ${ALPHA}`);
      await expect(mark.getAttribute('data-requirement-id')).resolves.toBe(ids.alpha);
    }
    await expect(file('bravo-only.txt').locator('[data-testid^="file-conflict"]').count()).resolves.toBe(0);
    await expect(page.getByTestId('changes-conflicts').isVisible()).resolves.toBe(true);
    await shot('changes-conflicts-light-1280');
  });

  it('lands one by Squash from the land menu: the menu says what each way does, then the landed state shows', async () => {
    const before = git(sandbox.workspace, 'rev-parse', 'main').trim();
    await openLand(ids.alpha);
    const panel = page.getByTestId('land-panel');
    // Where it stands: clean on main, in conflict with the other two.
    await expect(panel.getByTestId('land-radar').getAttribute('data-state')).resolves.toBe('clean');
    await expect(panel.getByTestId('land-radar-with').count()).resolves.toBe(2);
    await expect(panel.getByTestId('land-what-merge').innerText()).resolves.toBe(
      'A merge commit on main; your checkout of main moves with it when clean.',
    );
    await expect(panel.getByTestId('land-what-squash').innerText()).resolves.toContain('One commit on main');
    await expect(panel.getByTestId('land-what-rebase').innerText()).resolves.toContain('replayed on main');
    const branch = (await get(ids.alpha)).worktree!.branch!;
    await expect(panel.getByTestId('land-what-pull_request').innerText()).resolves.toContain(
      `Pushes ${branch} to GitHub`,
    );
    await expect(panel.getByTestId('land-mark-done').isChecked()).resolves.toBe(true);
    await panel.getByTestId('land-method-merge').check();
    await panel.getByTestId('land-method-squash').check();
    // The label follows the chosen method on the page's next render, not within check() itself.
    await untilText(panel.getByTestId('land-submit'), 'Squash into main');
    // The commit message is offered (the title first, never a system line) and can be written over.
    const message = panel.getByTestId('land-message');
    await until('the default message', async () =>
      (await message.inputValue()).startsWith(`${ALPHA}\n`) ? true : undefined,
    );
    expect(await message.inputValue()).toContain(`Requirement: ${ids.alpha}`);
    await message.fill(`${ALPHA}\n\nReviewed in the review view: the shared file only.`);
    await shot('land-menu-light-1280');
    await panel.getByTestId('land-submit').click();

    const landed = page.getByTestId('landed');
    await landed.waitFor();
    await page.getByTestId('land-panel').waitFor({ state: 'detached' });
    const after = git(sandbox.workspace, 'rev-parse', 'main').trim();
    expect(await landed.innerText()).toMatch(new RegExp(`^Landed \\(Squash\\) as ${after.slice(0, 7)} at .+`));
    // One commit on the old main, with Alpha's title; the person's clean checkout of main moved with it.
    expect(git(sandbox.workspace, 'rev-list', '--parents', '-n', '1', 'main').trim().split(' ')).toEqual([
      after,
      before,
    ]);
    expect(git(sandbox.workspace, 'log', '-1', '--format=%B', 'main').trim()).toBe(
      `${ALPHA}\n\nReviewed in the review view: the shared file only.`,
    );
    expect(fs.readFileSync(path.join(sandbox.workspace, 'shared.txt'), 'utf8')).toBe('alpha\n');
    const alpha = await get(ids.alpha);
    expect([alpha.status, alpha.landing.landedMethod, alpha.landing.landedCommit]).toEqual(['done', 'squash', after]);
    await shot('landed-light-1280');
    // Opened again: it says what it landed as, and offers no land (nothing new since).
    await page.getByTestId('land-toggle').click();
    const again = page.getByTestId('land-panel');
    await expect(again.getByTestId('land-landed-commit').innerText()).resolves.toBe(after.slice(0, 12));
    await expect(again.getByTestId('land-submit').count()).resolves.toBe(0);
    await expect(again.getByTestId('land-enqueue').count()).resolves.toBe(0);
    await page.getByTestId('land-close').click();
  });

  it('after the land the others show "conflicts with base" (live, no reload), and Delta how far behind it is', async () => {
    await goto('/requirements');
    await until(
      'the radar after the land',
      async () =>
        (await get(ids.bravo)).landing.mergesCleanly === false &&
        (await get(ids.charlie)).landing.mergesCleanly === false,
      30_000,
      100,
    );
    for (const [theme, viewport] of VIEWS) {
      await goto('/requirements', theme, viewport);
      for (const id of [ids.bravo, ids.charlie]) {
        await expect(card(id).getByTestId('card-radar-base').innerText()).resolves.toBe('conflicts with base');
        await expect(
          card(id).locator('[data-testid="card-radar-pair"], [data-testid="card-radar-pairs"]').count(),
        ).resolves.toBe(0);
      }
      await expect(card(ids.bravo).getByTestId('card-radar-base').getAttribute('title')).resolves.toBe(
        'Conflicts with main in notes.txt, shared.txt',
      );
      await expect(card(ids.delta).getByTestId('card-radar-behind').innerText()).resolves.toBe('behind by 1');
      if (viewport === DESKTOP) {
        // (On a phone the Done column is not the one shown.)
        await expect(card(ids.alpha).getByTestId('card-radar-landed').innerText()).resolves.toBe('landed');
      }
      await fits(card(ids.bravo));
      await shot(`board-after-land-${theme}-${viewport.width}`);
    }
    // The Changes tab now marks them as conflicting with the base.
    await goto(`/requirements/${ids.bravo}`);
    await page.getByTestId('tab-changes').click();
    for (const p of ['shared.txt', 'notes.txt']) {
      await page.locator(`[data-testid="changed-file"][data-path="${p}"]`).getByTestId('file-conflict-base').waitFor();
    }
    await expect(page.locator('[data-testid="file-conflict-with"]').count()).resolves.toBe(0);
  });

  it("shows the agent's conflict message in the reader's language", async () => {
    // The base move told Bravo's agent (and woke it): let that run end before anything lands.
    await until('the conflict message to Bravo', async () => {
      const items = (
        await ok(
          manager.api.GET('/api/requirements/{id}/messages', {
            params: { path: { id: ids.bravo }, query: { limit: 200 } },
          }),
        )
      ).items;
      return items.some((m) => m.code === 'landing.conflict');
    });
    await resting(ids.bravo, 2);
    await resting(ids.charlie, 2);
    const main = git(sandbox.workspace, 'rev-parse', 'main').trim().slice(0, 12);
    await goto(`/requirements/${ids.bravo}`);
    const text = page.locator('[data-testid="system-text"][data-code="landing.conflict"]');
    await expect(text.innerText()).resolves.toContain(
      `main moved to ${main}, and this work no longer merges onto it cleanly. Conflicting files (2): notes.txt, shared.txt.`,
    );
    await page.getByTestId('language').selectOption('zh-CN');
    await expect(text.innerText()).resolves.toContain(
      `main 已移动到 ${main}，这项工作不再能干净地合入。冲突文件（2）：notes.txt, shared.txt。`,
    );
    await page.getByTestId('language').selectOption('en');
  });

  it('a refused land shows why and the files, and keeps every choice; so does an unavailable pull request', async () => {
    const main = git(sandbox.workspace, 'rev-parse', 'main').trim();
    const branch = (await get(ids.bravo)).worktree!.branch!;
    const head = git(sandbox.workspace, 'rev-parse', branch).trim();
    for (const [theme, viewport] of VIEWS) {
      await openLand(ids.bravo, theme, viewport);
      const panel = page.getByTestId('land-panel');
      await expect(panel.getByTestId('land-radar').getAttribute('data-state')).resolves.toBe('conflicts');
      await expect(panel.getByTestId('land-radar-files').innerText()).resolves.toBe('notes.txt\nshared.txt');
      await panel.getByTestId('land-method-merge').check();
      await panel.getByTestId('land-mark-done').uncheck();
      await panel.getByTestId('land-submit').click();
      const refusal = panel.getByTestId('land-refusal');
      await refusal.waitFor();
      await expect(refusal.getAttribute('data-code')).resolves.toBe('land_conflict');
      await expect(refusal.locator('strong').innerText()).resolves.toBe(
        'It conflicts with main: ask its agent to rebase and resolve these files.',
      );
      await expect(refusal.getByTestId('land-refusal-message').innerText()).resolves.toContain(
        `409 · "${BRAVO}" conflicts with main in notes.txt, shared.txt`,
      );
      await expect(refusal.getByTestId('land-refusal-files').innerText()).resolves.toBe('notes.txt\nshared.txt');
      // Nothing the person chose is lost.
      await expect(panel.getByTestId('land-method-merge').isChecked()).resolves.toBe(true);
      await expect(panel.getByTestId('land-mark-done').isChecked()).resolves.toBe(false);
      await fits(refusal);
      await fits(panel);
      await shot(`land-refused-${theme}-${viewport.width}`);
    }
    // …and nothing moved.
    expect(git(sandbox.workspace, 'rev-parse', 'main').trim()).toBe(main);
    expect(git(sandbox.workspace, 'rev-parse', branch).trim()).toBe(head);
    expect((await get(ids.bravo)).status).toBe('waiting_confirmation');

    // No GitHub remote here: "Open pull request" is not offered, and says what is missing.
    await openLand(ids.bravo);
    const panel = page.getByTestId('land-panel');
    await panel.getByTestId('land-pr-missing').getByText('no remote on GitHub').waitFor();
    await expect(panel.getByTestId('land-method-pull_request').isDisabled()).resolves.toBe(true);
  });

  it('disables the land with the reason while a run is at work', async () => {
    await openLand(ids.charlie);
    // A run that holds on until told (a file appears): long enough to look at the menu.
    const gate = path.join(sandbox.shared, 'charlie-gate');
    const before = (await rdRuns(ids.charlie)).length;
    await ok(
      manager.api.POST('/api/requirements/{id}/reply', {
        body: { message: sh(`while [ ! -f ${gate} ]; do sleep 0.1; done`) },
        params: { path: { id: ids.charlie } },
      }),
      202,
    );
    const panel = page.getByTestId('land-panel');
    // Live: the menu learns of the run from its event, without a reload.
    await panel.locator('[data-testid="land-blocked"][data-block="running"]').waitFor();
    await expect(panel.getByTestId('land-submit').isDisabled()).resolves.toBe(true);
    await expect(panel.getByTestId('land-submit').getAttribute('aria-describedby')).resolves.toBe('land-blocked');
    await shot('land-blocked-running-light-1280');
    fs.writeFileSync(gate, '');
    await resting(ids.charlie, before + 1);
    await panel.getByTestId('land-blocked').waitFor({ state: 'detached' });
    await expect(panel.getByTestId('land-submit').isDisabled()).resolves.toBe(false);

    // A message of the person's the agent has not read yet (its run stopped): the land warns first.
    const held = path.join(sandbox.shared, 'charlie-held');
    await ok(
      manager.api.POST('/api/requirements/{id}/reply', {
        body: { message: sh(`while [ ! -f ${held} ]; do sleep 0.1; done`) },
        params: { path: { id: ids.charlie } },
      }),
      202,
    );
    await panel.locator('[data-testid="land-blocked"][data-block="running"]').waitFor();
    await ok(
      manager.api.POST('/api/requirements/{id}/interrupt', {
        body: { mode: 'stop' },
        params: { path: { id: ids.charlie } },
      }),
    );
    await resting(ids.charlie, before + 2);
    expect((await get(ids.charlie)).session.pendingMessageCount).toBeGreaterThan(0);
    const main = git(sandbox.workspace, 'rev-parse', 'main').trim();
    await panel.getByTestId('land-blocked').waitFor({ state: 'detached' });
    await panel.getByTestId('land-submit').click();
    await panel.getByTestId('land-pending-warning').waitFor();
    // The squash's message was offered when the menu opened (the chosen way from the start).
    expect(await panel.getByTestId('land-message').inputValue()).toMatch(new RegExp(`^${CHARLIE}\n`));
    await untilText(panel.getByTestId('land-submit'), 'Land anyway');
    expect(git(sandbox.workspace, 'rev-parse', 'main').trim()).toBe(main);
    await shot('land-pending-warning-light-1280');
    await page.getByTestId('land-close').click();
  });

  it('offers to commit uncommitted work first: refused without it (with the files), landed with it', async () => {
    await openLand(ids.delta);
    const panel = page.getByTestId('land-panel');
    const commit = panel.getByTestId('land-commit-pending');
    await expect(commit.isChecked()).resolves.toBe(false);
    await panel.getByTestId('land-method-squash').check();
    await panel.getByTestId('land-submit').click();
    const refusal = panel.getByTestId('land-refusal');
    await expect(refusal.getAttribute('data-code')).resolves.toBe('worktree_dirty');
    await expect(refusal.getByTestId('land-refusal-files').innerText()).resolves.toBe('delta.txt');
    await shot('land-dirty-refused-light-1280');
    await commit.check();
    await panel.getByTestId('land-submit').click();
    await page.getByTestId('landed').waitFor();
    expect(git(sandbox.workspace, 'show', 'main:delta.txt')).toBe('delta\n');
    expect((await get(ids.delta)).landing.landedMethod).toBe('squash');
  });

  it('queues from the land menu; the board lists the queue with state, reason and files', async () => {
    await resting(ids.bravo);
    await resting(ids.charlie);
    await openLand(ids.bravo);
    await page.getByTestId('land-method-merge').check();
    await page.getByTestId('land-enqueue').click();
    const place = page.getByTestId('land-queued');
    await place.waitFor();
    await expect(place.innerText()).resolves.toMatch(/^In the merge queue: 1 of 1 \(/);
    // The queue tries it at once, finds the conflict and pauses on it.
    await page.locator('[data-testid="land-queued"][data-state="paused"]').waitFor({ timeout: 30_000 });
    await openLand(ids.charlie);
    await page.getByTestId('land-method-rebase').check();
    await page.getByTestId('land-enqueue').click();
    // It conflicts with main too: the queue passes over the paused Bravo, tries it, and pauses on it as well.
    await page.locator('[data-testid="land-queued"][data-state="paused"]').waitFor({ timeout: 30_000 });
    await expect(page.getByTestId('land-queued').innerText()).resolves.toMatch(
      /^In the merge queue: 2 of 2 \(paused\)$/,
    );
    expect(await queueOrder()).toEqual([ids.bravo, ids.charlie]);

    for (const [theme, viewport] of VIEWS) {
      await goto('/requirements', theme, viewport);
      const queue = page.getByTestId('landing-queue');
      await queue.waitFor();
      const items = queue.getByTestId('queue-item');
      await items.nth(1).waitFor();
      await expect(items.evaluateAll((li) => li.map((e) => e.getAttribute('data-requirement-id')))).resolves.toEqual([
        ids.bravo,
        ids.charlie,
      ]);
      const bravo = items.nth(0);
      await expect(bravo.getAttribute('data-state')).resolves.toBe('paused');
      await expect(bravo.getByTestId('queue-reason').innerText()).resolves.toContain(
        `waiting: "${BRAVO}" conflicts with main`,
      );
      // Its agent is not at work: a start lets it read the rebase request (issue 47 §5).
      await expect(bravo.getByTestId('queue-start').innerText()).resolves.toBe(`Start ${BRAVO} to let it rebase`);
      await expect(bravo.getByTestId('queue-files').innerText()).resolves.toBe('notes.txt, shared.txt');
      await expect(items.nth(1).getByTestId('queue-state').innerText()).resolves.toBe('paused');
      await fits(queue);
      await fits(items.nth(1).getByTestId('queue-remove'));
      await shot(`queue-${theme}-${viewport.width}`);
    }
  });

  it('reorders the queue by dragging, and by the arrows from the keyboard; removes from it', async () => {
    await goto('/requirements');
    const items = page.getByTestId('landing-queue').getByTestId('queue-item');
    const order = () => items.evaluateAll((li) => li.map((e) => e.getAttribute('data-requirement-id')));
    await items.nth(1).waitFor();
    await expect(order()).resolves.toEqual([ids.bravo, ids.charlie]);
    // Charlie dropped on Bravo's upper half: it goes first.
    await items.nth(1).dragTo(items.nth(0), { sourcePosition: { x: 8, y: 10 }, targetPosition: { x: 8, y: 3 } });
    await until('the dragged order on screen', async () => (await order()).join() === [ids.charlie, ids.bravo].join());
    await until(
      'the server to take the new order',
      async () => (await queueOrder()).join() === [ids.charlie, ids.bravo].join(),
    );
    await shot('queue-dragged-light-1280');

    // Bravo back up, from the keyboard: the focus stays on Bravo (its down arrow, now that it is first).
    const up = page.locator(`[data-testid="queue-item"][data-requirement-id="${ids.bravo}"]`).getByTestId('queue-up');
    await expect(up.getAttribute('aria-label')).resolves.toBe(`Move up: ${BRAVO}`);
    await up.focus();
    await page.keyboard.press('Enter');
    await until(
      'the order of the arrows on screen',
      async () => (await order()).join() === [ids.bravo, ids.charlie].join(),
    );
    await until(
      'the server to take the order of the arrows',
      async () => (await queueOrder()).join() === [ids.bravo, ids.charlie].join(),
    );
    // The drag's own event can still be on its way and move the rows once more (a moved row loses
    // the focus in a browser); the panel puts the focus back after that render, so it is read until then.
    const focused = () =>
      page.evaluate(() => [
        document.activeElement?.getAttribute('data-testid'),
        document.activeElement?.closest('[data-requirement-id]')?.getAttribute('data-requirement-id'),
      ]);
    await until(
      "the focus on Bravo's down arrow",
      async () => (await focused()).join() === ['queue-down', ids.bravo].join(),
    );
    await expect(page.getByTestId('queue-announcement').innerText()).resolves.toBe(`${BRAVO} is now 1 of 2`);
    // Orders arriving from elsewhere move the rows under the focus: it stays on Bravo's arrows.
    await ok(manager.api.PUT('/api/landing-queue', { body: { requirementIds: [ids.charlie, ids.bravo] } }));
    await until(
      'the order from elsewhere on screen',
      async () => (await order()).join() === [ids.charlie, ids.bravo].join(),
    );
    await ok(manager.api.PUT('/api/landing-queue', { body: { requirementIds: [ids.bravo, ids.charlie] } }));
    await until(
      'the order from elsewhere, undone, on screen',
      async () => (await order()).join() === [ids.bravo, ids.charlie].join(),
    );
    await until(
      "the focus back on Bravo's down arrow",
      async () => (await focused()).join() === ['queue-down', ids.bravo].join(),
    );
    // …and down again with the arrow it has focus on.
    await page.keyboard.press('Enter');
    await until('the order on screen', async () => (await order()).join() === [ids.charlie, ids.bravo].join());
    await until('the server to take it', async () => (await queueOrder()).join() === [ids.charlie, ids.bravo].join());

    await page
      .locator(`[data-testid="queue-item"][data-requirement-id="${ids.charlie}"]`)
      .getByTestId('queue-remove')
      .click();
    await until('Charlie out of the queue on screen', async () => (await order()).join() === ids.bravo);
    expect(await queueOrder()).toEqual([ids.bravo]);
    // Live: a change made elsewhere (here through the API) shows without a reload.
    await ok(
      manager.api.DELETE('/api/landing-queue/{requirementId}', { params: { path: { requirementId: ids.bravo } } }),
    );
    await page.getByTestId('landing-queue').waitFor({ state: 'detached' });
  });
});
