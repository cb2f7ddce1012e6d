import {
  ChangeDetectionStrategy,
  Component,
  ElementRef,
  computed,
  effect,
  inject,
  input,
  signal,
  untracked,
  viewChild,
} from '@angular/core';
import { Router, RouterLink } from '@angular/router';

import { I18n, keyOf } from '../core/i18n';
import { BudgetMeter } from '../boards/budget-meter';
import { attentionOf } from '../core/attention';
import { inWords } from '../core/api';
import { landed } from '../core/landing';
import { isQueued } from '../core/live/queued';
import type { Requirement } from '../core/api-types';
import { PageTitle } from '../core/page-title';
import { Notifier } from '../core/notifier';
import { ConversationStore } from '../core/stores/conversation-store';
import { LiveSync } from '../core/stores/live-sync';
import { RequirementsStore } from '../core/stores/requirements-store';
import { RunsStore } from '../core/stores/runs-store';
import { sumUsage } from '../core/stores/usage-store';
import { CreateRequirementDialog, type RequirementDialogMode } from '../dialogs/create-requirement-dialog';
import { Composer } from './composer';
import { ChangesPanel } from './changes-panel';
import { Conversation } from './conversation';
import { LandPanel } from './land-panel';
import { MarkdownRenderer } from './markdown';
import { PullRequestList } from './pull-request-list';
import { NetworkPanel } from './network-panel';
import { TimerList } from './timer-list';
import { WorktreeStrip } from './worktree-strip';
import { TraceTimeline } from './trace-timeline';

type Tab = 'overview' | 'trace' | 'changes';
/** On a phone one pane shows at a time. */
type Pane = 'conversation' | 'details';

@Component({
  selector: 'am-requirement-detail',
  imports: [
    RouterLink,
    BudgetMeter,
    ChangesPanel,
    Conversation,
    Composer,
    CreateRequirementDialog,
    LandPanel,
    TraceTimeline,
    PullRequestList,
    NetworkPanel,
    TimerList,
    WorktreeStrip,
  ],
  changeDetection: ChangeDetectionStrategy.OnPush,
  templateUrl: './requirement-detail.html',
  host: { '(document:pointerdown)': 'onDocumentPointer($event)' },
})
export class RequirementDetail {
  /** The route parameter (component input binding). */
  readonly id = input.required<string>();
  /** `?message=<sequence>`: the message to show (a search result opens the conversation there). */
  readonly message = input<string | undefined>(undefined);
  protected readonly focusSequence = computed(() => {
    const sequence = Number(this.message());
    return Number.isInteger(sequence) && sequence > 0 ? sequence : null;
  });
  private readonly router = inject(Router);
  private readonly title = inject(PageTitle);
  private readonly notifier = inject(Notifier);
  private readonly sync = inject(LiveSync);
  private readonly conversations = inject(ConversationStore);
  private readonly requirements = inject(RequirementsStore);
  protected readonly runsStore = inject(RunsStore);
  protected readonly i18n = inject(I18n);
  protected readonly markdown = inject(MarkdownRenderer);
  protected readonly t = this.i18n.t;
  protected readonly keyOf = keyOf;
  protected readonly composer = viewChild(Composer);
  protected readonly tab = signal<Tab>('overview');
  protected readonly pane = signal<Pane>('conversation');
  /** The edit or fork dialog, when open. */
  protected readonly dialog = signal<RequirementDialogMode | null>(null);
  protected readonly busy = signal(false);
  protected readonly missing = signal(false);
  /** The ⋯ menu of occasional actions (a phone's; on a wide screen they are all in the row). */
  protected readonly menuOpen = signal(false);
  private readonly moreToggle = viewChild<ElementRef<HTMLButtonElement>>('moreToggle');
  /** The land menu (issue 28), open under the header. */
  protected readonly landOpen = signal(false);
  private readonly landToggle = viewChild<ElementRef<HTMLButtonElement>>('landToggle');

  /** Team mode: this manager's runner (undefined until asked, null off a board); a Requirement on another one can be moved here. */
  protected readonly ownRunner = signal<string | null | undefined>(undefined);

  protected readonly requirement = computed(() => this.requirements.requirements().get(this.id()) ?? null);
  protected readonly parent = computed(() => {
    const parentId = this.requirement()?.parentRequirementId;
    return parentId ? (this.requirements.requirements().get(parentId) ?? { id: parentId, title: parentId }) : null;
  });
  protected readonly children = computed(() =>
    [...this.requirements.requirements().values()].filter(
      (r) => r.parentRequirementId === this.id() && r.status !== 'cancelled',
    ),
  );
  /**
   * Newest first. A continuation opens in the very transaction (often the same millisecond) that
   * ends the run before it: the one that finished first is the older.
   */
  protected readonly runs = computed(() =>
    [...this.runsStore.runs().values()]
      .filter((r) => r.requirementId === this.id())
      .sort((a, b) =>
        a.startedAt !== b.startedAt
          ? a.startedAt < b.startedAt
            ? 1
            : -1
          : (a.finishedAt ?? '~') < (b.finishedAt ?? '~')
            ? 1
            : -1,
      ),
  );
  protected readonly activeRun = computed(() => this.runs().find((r) => r.status === 'running' && r.role === 'rd'));
  protected readonly running = computed(() => this.requirement()?.session.state === 'running');
  /** Steer makes sense only when a message arrived after the run took its input. */
  protected readonly canSteer = computed(() => {
    const requirement = this.requirement();
    const active = this.activeRun();
    return (
      !!requirement &&
      this.running() &&
      this.conversations
        .messages(requirement.id)()
        .some((m) => isQueued(m, requirement, active))
    );
  });
  /** The dependencies still pending, titled (read when the board has not loaded them): Start waits for them. */
  protected readonly blockers = computed(() =>
    (this.requirement()?.dependsOn ?? [])
      .filter((d) => d.state === 'pending')
      .map((d) => ({
        id: d.requirementId,
        title: this.requirements.requirements().get(d.requirementId)?.title ?? null,
        until: d.until,
      })),
  );
  protected readonly canStart = computed(() => {
    const r = this.requirement();
    return !!r && r.status !== 'done' && r.status !== 'cancelled' && !this.running();
  });
  /**
   * Start only when it has something to deliver (a first run, a failed run's input, pending
   * messages): a waiting Requirement with nothing new would answer its last message again. The
   * composer's Send is then the way on (the server refuses such a start, too).
   */
  protected readonly hasInput = computed(() => {
    const r = this.requirement();
    return !!r && (r.status === 'todo' || r.session.state === 'failed' || r.session.pendingMessageCount > 0);
  });
  protected readonly forkedFrom = computed(() => {
    const id = this.requirement()?.forkedFromRequirementId;
    return id ? (this.requirements.requirements().get(id) ?? { id, title: id }) : null;
  });
  /** A run's error as a line, its repeated rest behind a toggle (issue 47 §2). */
  protected readonly inWords = inWords;
  protected readonly attention = computed(() => {
    const r = this.requirement();
    return r ? attentionOf(r) : null;
  });
  /** Every run of this Requirement (RD and reviews), summed. */
  protected readonly usage = computed(() => sumUsage(this.runs()));
  /** Runs numbered oldest first (the trace names them so). */
  protected readonly runNumbers = computed(() => new Map([...this.runs()].reverse().map((run, i) => [run.id, i + 1])));

  private readonly readBlockers = new Set<string>();

  /** Ticks while a run is active, so its duration counts up. */
  protected readonly now = signal(Date.now());

  constructor() {
    effect((onCleanup) => {
      if (this.runs().some((r) => r.status === 'running')) {
        const timer = setInterval(() => this.now.set(Date.now()), 1000);
        onCleanup(() => clearInterval(timer));
      }
    });
    effect(() => {
      const id = this.id();
      untracked(() => {
        this.missing.set(false);
        this.sync.openRequirement(id).catch(() => this.missing.set(!this.requirements.requirements().get(id)));
      });
    });
    effect(() => {
      // A blocker outside the board's window: read it once, so its title shows instead of its id.
      for (const blocker of this.blockers()) {
        if (blocker.title === null && !this.readBlockers.has(blocker.id)) {
          this.readBlockers.add(blocker.id);
          void this.requirements.read(blocker.id).catch(() => undefined);
        }
      }
    });
    effect(() => {
      const r = this.requirement();
      if (r) {
        this.title.set(`${r.title} · Agent Manager`);
      }
    });
    effect(() => {
      // Only a Requirement that runs on a board asks which runner this is.
      if (this.requirement()?.runner && this.ownRunner() === undefined) {
        void this.requirements.ownRunnerId().then((id) => this.ownRunner.set(id));
      }
    });
  }

  /** Team mode: runs on another person's runner, so it can be moved to this one. */
  protected runsElsewhere(r: Requirement): boolean {
    const own = this.ownRunner();
    return r.runner !== null && own !== undefined && own !== null && r.runner.id !== own;
  }

  protected async onMove(): Promise<void> {
    const r = this.requirement();
    const runner = r ? this.requirements.runnerOf(r) : null;
    if (
      !runner ||
      !confirm(this.t(runner.online ? 'action.moveAsk' : 'action.moveAskOffline', { person: runner.person }))
    ) {
      return;
    }
    await this.act((id) => this.requirements.move(id));
  }

  /** A choice in the menu closes it; Escape also gives focus back to ⋯. */
  protected closeMenu(refocus: boolean): void {
    if (!this.menuOpen()) {
      return;
    }
    this.menuOpen.set(false);
    if (refocus) {
      this.moreToggle()?.nativeElement.focus();
    }
  }

  /** The land menu closed (Escape, ✕, a land done): focus goes back to what opened it, or to ⋯ on a phone where that is hidden. */
  protected closeLand(): void {
    this.landOpen.set(false);
    const toggle = this.landToggle()?.nativeElement;
    (toggle && toggle.offsetParent !== null ? toggle : this.moreToggle()?.nativeElement)?.focus();
  }

  protected landedText(r: Requirement): string {
    return landed(r, this.t, (iso) => this.i18n.dateTime(iso));
  }

  /** Focus leaving the menu (a tap elsewhere, Tab past it) closes it. */
  protected onMenuFocusOut(event: FocusEvent): void {
    const container = event.currentTarget as HTMLElement;
    if (!container.contains(event.relatedTarget as Node | null)) {
      this.menuOpen.set(false);
    }
  }

  /** A tap outside the menu closes it (Safari does not focus buttons, so focusout alone misses it). */
  protected onDocumentPointer(event: Event): void {
    if (this.menuOpen() && !(event.target as Element | null)?.closest?.('.more')) {
      this.menuOpen.set(false);
    }
  }

  /** Arrow keys move between the two tabs (the WAI-ARIA tabs pattern), focus follows. */
  protected switchTab(step = 1): void {
    const tabs: Tab[] =
      this.requirement()?.isolation === 'worktree' ? ['overview', 'trace', 'changes'] : ['overview', 'trace'];
    this.tab.set(tabs[(tabs.indexOf(this.tab()) + step + tabs.length) % tabs.length] ?? 'overview');
    document.getElementById(`tab-${this.tab()}`)?.focus();
  }

  protected async onStart(): Promise<void> {
    this.notifier.askPermission();
    const composer = this.composer();
    const draft = composer?.peekDraft() ?? {};
    // Cleared only once the server took the draft: a refused start keeps it for another try.
    if (await this.act((id) => this.requirements.start(id, draft))) {
      composer?.clearDraft();
    }
  }

  protected async onInterrupt(mode: 'stop' | 'steer'): Promise<void> {
    await this.act((id) => this.requirements.interrupt(id, mode));
  }

  protected async onCancel(): Promise<void> {
    if (!confirm(this.t('action.cancelAsk'))) {
      return;
    }
    await this.act((id) => this.requirements.cancel(id));
  }

  /** True once the Requirements proposed below it spent something: its tree's usage is then worth its own line. */
  protected treeSpent(r: Requirement): boolean {
    const tokens = (u: Requirement['usage']) => u.inputTokens + u.outputTokens;
    return tokens(r.treeUsage) > tokens(r.usage) || (r.treeUsage.costUsd ?? 0) > (r.usage.costUsd ?? 0);
  }

  protected usageText(u: { inputTokens: number; outputTokens: number; costUsd: number | null }): string {
    const fmt = (n: number) => n.toLocaleString(this.i18n.locale());
    const tokens = this.t('usage.tokens', { i: fmt(u.inputTokens), o: fmt(u.outputTokens) });
    return u.costUsd === null ? tokens : `${tokens} · $${u.costUsd.toFixed(4)}`;
  }

  protected async onConfirm(): Promise<void> {
    await this.act((id) => this.requirements.confirm(id));
  }

  protected async onDelete(): Promise<void> {
    if (!confirm(this.t('action.deleteAsk'))) {
      return;
    }
    await this.act(async (id) => {
      await this.requirements.remove(id);
      void this.router.navigate(['/requirements']);
    });
  }

  protected tokens(run: {
    inputTokens: number | null;
    outputTokens: number | null;
    costUsd: number | null;
  }): string | null {
    if (run.inputTokens === null && run.outputTokens === null) {
      return null;
    }
    const fmt = (n: number | null) => (n ?? 0).toLocaleString(this.i18n.locale());
    const tokens = this.t('detail.tokens', { i: fmt(run.inputTokens), o: fmt(run.outputTokens) });
    return run.costUsd === null ? tokens : `${tokens} · $${run.costUsd.toFixed(4)}`;
  }

  protected pausedText(r: Requirement): string {
    const n = r.session.pendingMessageCount;
    return n === 0 ? this.t('paused.none') : n === 1 ? this.t('paused.one') : this.t('paused.many', { n });
  }

  protected statusClass(r: Requirement): string {
    if (attentionOf(r) === 'failed') {
      return 'danger';
    }
    return r.status === 'done'
      ? 'ok'
      : r.status === 'waiting_confirmation'
        ? 'warn'
        : r.status === 'doing'
          ? 'accent'
          : '';
  }

  /** True when the action succeeded (a failure is shown by the API service). */
  private async act(action: (id: string) => Promise<unknown>): Promise<boolean> {
    this.busy.set(true);
    try {
      await action(this.id());
      return true;
    } catch {
      return false;
    } finally {
      this.busy.set(false);
    }
  }
}
