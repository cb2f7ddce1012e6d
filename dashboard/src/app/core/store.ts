import { DestroyRef, Injectable, computed, inject, signal, type Signal, type WritableSignal } from '@angular/core';
import { takeUntilDestroyed } from '@angular/core/rxjs-interop';
import { Router } from '@angular/router';

import { Api } from './api';
import { EventStream } from './event-stream';
import { I18n } from './i18n';
import { LiveState, type Changes } from './live/live-state';
import type { ManagerEvent, Message, PullRequest, Requirement, ReviewRequest, Run, Timer, Trace } from './models';
import { Notifier } from './notifier';

/** Created-time windows of the board filter, in days (null: all time). */
export const CREATED_WINDOWS = { '24h': 1, '7d': 7, '30d': 30, '90d': 90, all: null } as const;
export type CreatedWindow = keyof typeof CREATED_WINDOWS;

export const cutoffFor = (window: CreatedWindow, now = Date.now()): string | null => {
  const days = CREATED_WINDOWS[window];
  return days === null ? null : new Date(now - days * 86_400_000).toISOString();
};

/** Requirements in the first page the board asks for. */
const FIRST_PAGE = 60;

/** How many message pages are fetched at once (sequences are gap-free, so pages can be guessed). */
const PARALLEL_PAGES = 4;

/**
 * The live workspace: JSON snapshots first, then SSE events merged into the same LiveState.
 * Each part is a read-only signal; components derive their views with `computed`.
 */
@Injectable({ providedIn: 'root' })
export class Store {
  private readonly api = inject(Api);
  private readonly stream = inject(EventStream);
  private readonly notifier = inject(Notifier);
  private readonly i18n = inject(I18n);
  private readonly router = inject(Router);
  private readonly live = new LiveState();

  private readonly requirementsSig = signal<ReadonlyMap<string, Requirement>>(new Map());
  private readonly pullRequestsSig = signal<ReadonlyMap<string, PullRequest>>(new Map());
  private readonly timersSig = signal<ReadonlyMap<string, Timer>>(new Map());
  private readonly runsSig = signal<ReadonlyMap<string, Run>>(new Map());
  private readonly reviewsSig = signal<ReadonlyMap<string, ReviewRequest>>(new Map());
  private readonly conversationSigs = new Map<string, WritableSignal<readonly Message[]>>();
  private readonly traceSigs = new Map<string, WritableSignal<readonly Trace[]>>();
  private readonly loadingSig = signal(true);
  /** Requirements are read newest first; this is how far back we have read. */
  private requirementsCursor: string | null | undefined;
  private loadedBack: string | null = new Date().toISOString();
  private reading: Promise<void> = Promise.resolve();

  readonly requirements = this.requirementsSig.asReadonly();
  readonly pullRequests = this.pullRequestsSig.asReadonly();
  readonly timers = this.timersSig.asReadonly();
  readonly runs = this.runsSig.asReadonly();
  readonly reviewRequests = this.reviewsSig.asReadonly();
  readonly loading = this.loadingSig.asReadonly();
  readonly connection = this.stream.state.asReadonly();
  /** Bumped on `manager.configuration.updated` so the settings dialog reloads. */
  readonly configurationVersion = signal(0);
  readonly window = signal<CreatedWindow>('7d');

  /** Every Requirement embeds its session: the Sessions board needs no separate list. */
  readonly sessions = computed(() => [...this.requirementsSig().values()].map((r) => ({ requirement: r, session: r.session })));

  constructor() {
    // Subscribe first: the stream is cursorless (live only), so anything that happens while the
    // snapshots are in flight arrives here and the merge keeps it over the older snapshot.
    this.stream.events$.pipe(takeUntilDestroyed(inject(DestroyRef))).subscribe((event) => {
      if (event === 'resync') {
        void this.resync();
      } else {
        this.onEvent(event);
      }
    });
    void this.loadSnapshots();
  }

  conversation(requirementId: string): Signal<readonly Message[]> {
    return this.signalFor(this.conversationSigs, requirementId);
  }

  trace(requirementId: string): Signal<readonly Trace[]> {
    return this.signalFor(this.traceSigs, requirementId);
  }

  /** Widens the created-time window, reading older pages only when needed. */
  async setWindow(window: CreatedWindow): Promise<void> {
    this.window.set(window);
    // One reader at a time: the pages share one cursor.
    await this.reading;
    const cutoff = cutoffFor(window);
    if (this.requirementsCursor !== null && (cutoff === null || (this.loadedBack !== null && cutoff < this.loadedBack))) {
      this.loadingSig.set(true);
      await this.readRequirements(cutoff).finally(() => this.loadingSig.set(false));
    }
  }

  /** A Requirement page: reads the conversation, runs, trace and timers once, then lives on SSE. */
  async openRequirement(id: string): Promise<void> {
    const fresh = !this.live.conversations.has(id) || this.live.conversation(id).items.length === 0;
    this.live.conversation(id);
    this.live.trace(id);
    const readRequirement = () =>
      this.api.call(this.api.client.GET('/api/requirements/{id}', { params: { path: { id } } }), true).then((r) => {
        if (this.live.loadRequirements([r])) {
          this.publish({ requirements: true });
        }
      });
    if (!fresh) {
      return readRequirement().catch(() => undefined);
    }
    // The conversation's length is guessed from the Requirement (see readMessages): on a deep
    // link read it first. From a board it is known, and the message pages go out before anything
    // else so the browser serves them first.
    const known = this.live.requirements.get(id) !== undefined;
    if (!known) {
      await readRequirement();
    }
    await Promise.all([this.readMessages(id), known ? readRequirement() : null, this.readRuns(id), this.readTimers(id)]);
    void this.readTrace(id);
  }

  async readReviewRequests(pullRequestId: string): Promise<void> {
    const { items } = await this.api.call(this.api.client.GET('/api/review-requests', { params: { query: { limit: this.api.pageSize, pullRequestId } } }), true);
    if (this.live.reviewRequests.upsertMany(items, 'snapshot')) {
      this.publish({ reviewRequests: true });
    }
  }

  /**
   * Applies a resource a mutation answered with, as a snapshot: it shows at once when it is
   * newer than what the page holds, and loses a tie, since its own event follows on the stream
   * (an answer can land after events that overtook it: a start's after its run already failed).
   */
  acceptRequirement(requirement: Requirement): void {
    if (this.live.loadRequirements([requirement], 'snapshot')) {
      this.publish({ requirements: true });
    }
  }

  acceptTimer(timer: Timer): void {
    if (this.live.timers.upsert(timer, 'snapshot')) {
      this.publish({ timers: true });
    }
  }

  acceptReviewRequest(review: ReviewRequest): void {
    if (this.live.reviewRequests.upsert(review, 'snapshot')) {
      this.publish({ reviewRequests: true });
    }
  }

  /** After a gap without a cursor: re-read the lists, and what is new in opened conversations. */
  private async resync(): Promise<void> {
    await this.loadSnapshots();
    for (const [id, log] of this.live.conversations) {
      const last = log.items[log.items.length - 1]?.sequence ?? 0;
      void this.readMessages(id, last).catch(() => undefined);
      void this.readRuns(id).catch(() => undefined);
      void this.readTrace(id).catch(() => undefined);
    }
  }

  private async loadSnapshots(): Promise<void> {
    this.loadingSig.set(true);
    this.requirementsCursor = undefined;
    this.loadedBack = new Date().toISOString();
    // Each part shows as soon as it arrives; one failing (already reported) does not hide the others.
    await Promise.allSettled([this.readRequirements(cutoffFor(this.window())), this.readPullRequests(), this.readTimers()]);
    this.loadingSig.set(false);
  }

  /** Pages newest first until older than `cutoff`; each page shows as soon as it arrives. */
  private readRequirements(cutoff: string | null): Promise<void> {
    const read = this.reading.then(() => this.readRequirementPages(cutoff));
    this.reading = read.catch(() => undefined);
    return read;
  }

  private async readRequirementPages(cutoff: string | null): Promise<void> {
    while (this.requirementsCursor !== null) {
      const cursor = this.requirementsCursor;
      // A small first page paints the board sooner (it fills the visible cards); then full pages.
      const limit = cursor === undefined ? FIRST_PAGE : this.api.pageSize;
      const page = await this.api.call(this.api.client.GET('/api/requirements', { params: { query: { cursor, limit } } }));
      this.requirementsCursor = page.nextCursor ?? null;
      const last = page.items[page.items.length - 1];
      this.loadedBack = this.requirementsCursor === null ? null : (last?.createdAt ?? null);
      if (this.live.loadRequirements(page.items)) {
        this.publish({ requirements: true });
        this.loadingSig.set(false);
      }
      if (cutoff !== null && last && last.createdAt < cutoff) {
        return;
      }
    }
  }

  private async readPullRequests(): Promise<void> {
    await this.api.all(
      (cursor) => this.api.call(this.api.client.GET('/api/pull-requests', { params: { query: { cursor, limit: this.api.pageSize } } })),
      () => true,
      (items) => this.live.pullRequests.upsertMany(items, 'snapshot') && this.publish({ pullRequests: true }),
    );
  }

  private async readTimers(requirementId?: string): Promise<void> {
    const page = (cursor: string | undefined) =>
      this.api.call(
        requirementId
          ? this.api.client.GET('/api/requirements/{id}/timers', { params: { path: { id: requirementId }, query: { cursor, limit: this.api.pageSize } } })
          : this.api.client.GET('/api/timers', { params: { query: { cursor, limit: this.api.pageSize } } }),
      );
    await this.api.all(page, () => true, (items) => this.live.timers.upsertMany(items, 'snapshot') && this.publish({ timers: true }));
  }

  private async readRuns(requirementId: string): Promise<void> {
    await this.api.all(
      (cursor) => this.api.call(this.api.client.GET('/api/runs', { params: { query: { cursor, limit: this.api.pageSize, requirementId } } })),
      () => true,
      (items) => this.live.runs.upsertMany(items, 'snapshot') && this.publish({ runs: true }),
    );
  }

  /**
   * The whole conversation. Sequences are gap-free, so every page's start is known in advance.
   * The session's last sequence is the conversation's length (as of the snapshot): all those pages
   * are requested at once, newest first, so the latest messages (what the reader sees first)
   * arrive first and each page shows as it lands; waves continue if the guess was short.
   */
  private async readMessages(id: string, from = 0): Promise<void> {
    const log = this.live.conversation(id);
    const size = this.api.pageSize;
    const session = this.live.requirements.get(id)?.session;
    const known = Math.max(0, (session?.lastMessageSequence ?? 0) - from);
    let next = 0;
    for (let wave = 0; ; wave++) {
      const count = wave === 0 ? Math.max(PARALLEL_PAGES, Math.ceil(known / size) + 1) : PARALLEL_PAGES;
      const starts = Array.from({ length: count }, (_, i) => from + (next + i) * size).reverse();
      next += count;
      const pages = await Promise.all(
        starts.map((afterSequence) =>
          this.api.call(this.api.client.GET('/api/requirements/{id}/messages', { params: { path: { id }, query: { afterSequence, limit: size } } })).then((page) => {
            if (log.add(page.items) > 0) {
              this.publish({ conversations: new Set([id]) });
            }
            return page;
          }),
        ),
      );
      if (pages.some((p) => p.items.length < size)) {
        return;
      }
    }
  }

  private async readTrace(id: string): Promise<void> {
    const log = this.live.trace(id);
    await this.api.all(
      (cursor) => this.api.call(this.api.client.GET('/api/requirements/{id}/trace', { params: { path: { id }, query: { cursor, limit: this.api.pageSize } } })),
      () => true,
      (items) => log.add(items) > 0 && this.publish({ traces: new Set([id]) }),
    );
  }

  private onEvent(event: ManagerEvent): void {
    const changes = this.live.apply(event);
    this.publish(changes);
    if (changes.repair?.length) {
      for (const id of changes.repair) {
        void this.api
          .call(this.api.client.GET('/api/requirements/{id}', { params: { path: { id } } }), true)
          .then((r) => this.acceptRequirement(r))
          .catch(() => undefined);
      }
    }
    if (changes.finishedRun && changes.finishedRun.role === 'rd') {
      const run = changes.finishedRun;
      const title = this.live.requirements.get(run.requirementId)?.title ?? run.requirementId;
      this.notifier.desktop(this.i18n.t('notify.finished', { s: this.i18n.t(`run.${run.status}`) }), title, () => void this.router.navigate(['/requirements', run.requirementId]));
    }
  }

  private publish(changes: Changes): boolean {
    if (changes.requirements) {
      this.requirementsSig.set(this.live.requirements.items);
    }
    if (changes.pullRequests) {
      this.pullRequestsSig.set(this.live.pullRequests.items);
    }
    if (changes.timers) {
      this.timersSig.set(this.live.timers.items);
    }
    if (changes.runs) {
      this.runsSig.set(this.live.runs.items);
    }
    if (changes.reviewRequests) {
      this.reviewsSig.set(this.live.reviewRequests.items);
    }
    if (changes.configuration) {
      this.configurationVersion.update((v) => v + 1);
    }
    for (const id of changes.conversations ?? []) {
      this.signalFor(this.conversationSigs, id).set(this.live.conversation(id).items);
    }
    for (const id of changes.traces ?? []) {
      this.signalFor(this.traceSigs, id).set(this.live.trace(id).items);
    }
    return true;
  }

  private signalFor<T>(map: Map<string, WritableSignal<readonly T[]>>, id: string): WritableSignal<readonly T[]> {
    let s = map.get(id);
    if (!s) {
      s = signal<readonly T[]>([]);
      map.set(id, s);
    }
    return s;
  }
}
