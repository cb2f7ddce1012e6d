import {
  ChangeDetectionStrategy,
  Component,
  ElementRef,
  afterNextRender,
  computed,
  inject,
  input,
  output,
  signal,
} from '@angular/core';

import { Api, ApiError } from '../core/api';
import { I18n, keyOf } from '../core/i18n';
import { isRefusalCode, landBlock, queueBlock } from '../core/landing';
import { LAND_METHODS, type LandMethod, type Requirement } from '../core/api-types';
import { Notifier } from '../core/notifier';
import { LandingStore } from '../core/stores/landing-store';

/** A refused land or queueing, as the menu shows it: in the reader's words, then the server's, then the files. */
interface Refusal {
  code: string | null;
  headline: string | null;
  message: string;
  files: readonly string[];
}

type Loose = (key: string, params?: Record<string, string | number>) => string;

/**
 * The land menu of a Requirement (issue 28 §4): where its work stands against its base and the
 * other Requirements (the conflict radar), how to land it — each way saying in one line what it
 * will do — and its merge queue place. A refusal is shown here with its files, and leaves every
 * choice as it was for another try; what is known to refuse up front (a run at work, no branch,
 * in place) disables the land with the reason.
 */
@Component({
  selector: 'am-land-panel',
  changeDetection: ChangeDetectionStrategy.OnPush,
  host: { '(keydown.escape)': 'closed.emit()' },
  styleUrl: './land-panel.css',
  templateUrl: './land-panel.html',
})
export class LandPanel {
  readonly requirement = input.required<Requirement>();
  /** Escape, ✕, or a land that went through. */
  readonly closed = output<void>();
  private readonly store = inject(LandingStore);
  private readonly api = inject(Api);
  private readonly notifier = inject(Notifier);
  private readonly host = inject<ElementRef<HTMLElement>>(ElementRef);
  protected readonly t = inject(I18n).t;
  private readonly loose = this.t as unknown as Loose;
  protected readonly keyOf = keyOf;
  protected readonly methods = LAND_METHODS;

  /** The person's choices: kept across a refusal, for the next try. */
  protected readonly method = signal<LandMethod>('squash');
  /** The commit message of a merge or squash: the default for the method until the person edits it. */
  protected readonly message = signal('');
  protected readonly messageEdited = signal(false);
  /** Why "Open pull request" cannot work here (no remote, no token), in the refusal's words; null: it can. */
  protected readonly pullRequestMissing = signal<string | null>(null);
  /** The person was told their message to the agent is still waiting: the next click lands anyway. */
  protected readonly pendingWarned = signal(false);
  protected readonly commitPending = signal(false);
  protected readonly markDone = signal(true);
  protected readonly busy = signal(false);
  protected readonly refusal = signal<Refusal | null>(null);
  /**
   * The work this menu was opened on (issue 44): a land or a queueing takes exactly that, and is
   * refused (head_moved) when the agent's work changed since — the person looks again first.
   */
  private shown: string | undefined;

  protected readonly landing = computed(() => this.requirement().landing);
  protected readonly base = computed(
    () => this.requirement().baseRef ?? this.requirement().worktree?.baseRef ?? 'HEAD',
  );
  protected readonly block = computed(() => landBlock(this.requirement()));
  protected readonly queueBlocked = computed(
    () => queueBlock(this.requirement()) ?? (this.method() === 'pull_request' ? ('pullRequest' as const) : null),
  );
  /** "Commit uncommitted work first" where the worktree is known dirty, or a land was refused for it. */
  protected readonly offerCommit = computed(
    () => !!this.requirement().worktree?.dirty || this.refusal()?.code === 'worktree_dirty',
  );
  protected readonly radarState = computed(() => {
    const clean = this.landing().mergesCleanly;
    return clean === true ? 'clean' : clean === false ? 'conflicts' : 'unchecked';
  });
  protected readonly queued = computed(() => {
    const queue = this.store.queue();
    const index = queue.findIndex((item) => item.requirementId === this.requirement().id);
    const item = queue[index];
    return item ? { item, position: index + 1, total: queue.length } : null;
  });
  /** Landed, and the agent's work is still what the land left: nothing new to land. */
  protected readonly landedAs = computed(() => {
    const { landedCommit, landedMethod, landedWork } = this.landing();
    const worktree = this.requirement().worktree;
    const now = worktree?.workSha ?? worktree?.headSha ?? null;
    return landedCommit !== null && landedMethod !== null && landedWork !== null && landedWork === now
      ? { commit: landedCommit, method: landedMethod }
      : null;
  });
  protected readonly doText = computed(() => this.loose(`land.do.${this.method()}`, { base: this.base() }));

  constructor() {
    // After the first render: the Requirement (an input) is there to ask about.
    afterNextRender(() => void this.loadMessage());
    void this.api
      .call(this.api.client.GET('/api/landing/readiness'), true)
      .then((readiness) => this.pullRequestMissing.set(readiness.available ? null : readiness.reason))
      .catch(() => undefined);
    afterNextRender(() => {
      const worktree = this.requirement().worktree;
      this.shown = worktree?.workSha ?? worktree?.headSha ?? undefined;
    });
    // Opened from the actions: focus goes to the chosen way, where the choice is made.
    afterNextRender(() =>
      this.host.nativeElement.querySelector<HTMLInputElement>('input[name="land-method"]:checked')?.focus(),
    );
  }

  protected choose(method: LandMethod): void {
    this.method.set(method);
    void this.loadMessage();
  }

  protected editMessage(text: string): void {
    this.messageEdited.set(true);
    this.message.set(text);
  }

  /** The default message of the chosen method, unless the person wrote their own. */
  private async loadMessage(): Promise<void> {
    const method = this.method();
    if (this.messageEdited() || (method !== 'squash' && method !== 'merge')) {
      return;
    }
    const { data } = await this.api.client.GET('/api/requirements/{id}/land-message', {
      params: { path: { id: this.requirement().id }, query: { method } },
    });
    if (data && this.method() === method && !this.messageEdited()) {
      this.message.set(data.message);
    }
  }

  protected what(method: LandMethod): string {
    return this.loose(`land.what.${method}`, { base: this.base(), branch: this.requirement().worktree?.branch ?? '' });
  }

  protected async land(): Promise<void> {
    const method = this.method();
    const local = method !== 'pull_request';
    // A message to the agent not read yet may change the work: said first, landed on the next click.
    if (this.requirement().session.pendingMessageCount > 0 && !this.pendingWarned()) {
      this.pendingWarned.set(true);
      return;
    }
    const message = (method === 'squash' || method === 'merge') && this.message().trim() ? this.message() : undefined;
    await this.attempt(async () => {
      const result = await this.store.land(
        this.requirement().id,
        local
          ? {
              commitPending: this.offerCommit() && this.commitPending(),
              expectedHead: this.shown,
              markDone: this.markDone(),
              message,
              method,
            }
          : { expectedHead: this.shown, method },
      );
      if (result.pullRequest) {
        this.notifier.info(
          this.t('land.prOpened', { pr: `${result.pullRequest.repository}#${result.pullRequest.number}` }),
        );
      }
      this.closed.emit();
    });
  }

  protected async enqueue(): Promise<void> {
    const method = this.method();
    if (method === 'pull_request') {
      return;
    }
    await this.attempt(() => this.store.enqueue(this.requirement().id, method, this.shown));
  }

  protected async dequeue(): Promise<void> {
    await this.attempt(() => this.store.dequeue(this.requirement().id));
  }

  private async attempt(action: () => Promise<void>): Promise<void> {
    this.busy.set(true);
    this.refusal.set(null);
    try {
      await action();
    } catch (err) {
      this.refusal.set(this.refusalOf(err));
    } finally {
      this.busy.set(false);
    }
  }

  private refusalOf(err: unknown): Refusal {
    if (!(err instanceof ApiError)) {
      return { code: null, files: [], headline: null, message: err instanceof Error ? err.message : String(err) };
    }
    const headline = isRefusalCode(err.code) ? this.loose(`land.refused.${err.code}`, { base: this.base() }) : null;
    return {
      code: err.code,
      files: err.details,
      headline,
      message: err.status ? `${err.status} · ${err.message}` : err.message,
    };
  }
}
