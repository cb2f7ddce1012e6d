import { DestroyRef, Injectable, inject } from '@angular/core';
import { takeUntilDestroyed } from '@angular/core/rxjs-interop';

import type { ManagerEvent } from '@libs/contracts';

import { EventStream } from '../event-stream';
import { AttentionStore } from './attention-store';
import { ConfigurationStore } from './configuration-store';
import { ModelCatalogStore } from './model-catalog-store';
import { ConversationStore } from './conversation-store';
import { LandingStore } from './landing-store';
import { PullRequestsStore } from './pull-requests-store';
import { RequirementsStore } from './requirements-store';
import { RunsStore } from './runs-store';
import { NetworkStore } from './network-store';
import { TimersStore } from './timers-store';
import { UsageStore } from './usage-store';
import { LIVE_STATE } from './live-state-token';

/** A Requirement's own page (`/requirements/<id>`), where a deep link lands. */
const DEEP_LINK = /^\/requirements\/([^/]+)/;
/** At most this long does a deep link hold the boards' snapshots back. */
const DEEP_LINK_GRACE_MS = 1500;

/**
 * Keeps the stores live: JSON snapshots first, then SSE events merged into the one LiveState and
 * handed to every store, each of which publishes only the part it owns. Created with the app
 * shell (which shows its connection state), so the snapshots start with the first page.
 */
@Injectable({ providedIn: 'root' })
export class LiveSync {
  private readonly stream = inject(EventStream);
  private readonly live = inject(LIVE_STATE);
  private readonly configuration = inject(ConfigurationStore);
  private readonly conversations = inject(ConversationStore);
  private readonly landing = inject(LandingStore);
  private readonly modelCatalog = inject(ModelCatalogStore);
  private readonly pullRequests = inject(PullRequestsStore);
  private readonly requirements = inject(RequirementsStore);
  private readonly runs = inject(RunsStore);
  private readonly timers = inject(TimersStore);
  private readonly network = inject(NetworkStore);
  private readonly usage = inject(UsageStore);
  private readonly attention = inject(AttentionStore);
  /** In this order: a finished run's notification finds its Requirement already published. */
  private readonly stores = [
    this.requirements,
    this.pullRequests,
    this.timers,
    this.runs,
    this.configuration,
    this.conversations,
    this.usage,
    this.modelCatalog,
    this.landing,
    this.network,
    this.attention,
  ];

  readonly connection = this.stream.state.asReadonly();

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
    // Opened at a Requirement (a link from a notification or a chat, often on a phone): its
    // conversation is read first, and the boards' snapshots (hundreds of Requirements) follow
    // once it is in, or after DEEP_LINK_GRACE_MS, instead of queueing in front of it.
    const deepLink = DEEP_LINK.exec(typeof location === 'undefined' ? '/' : location.pathname)?.[1];
    if (deepLink !== undefined) {
      this.snapshotsWaiting = setTimeout(() => this.snapshotsNow(), DEEP_LINK_GRACE_MS);
      // Its reads start with the shell, alongside the detail view's code (a lazy chunk the phone
      // would otherwise download and compile first); the view then joins the reads in flight.
      void this.openRequirement(decodeSegment(deepLink)).catch(() => undefined);
    } else {
      void this.loadSnapshots();
    }
  }

  private snapshotsWaiting: ReturnType<typeof setTimeout> | undefined;
  /** Requirement pages being opened: a second open while the first reads joins it. */
  private readonly opening = new Map<string, Promise<void>>();

  /** The deferred snapshots of a deep link, once (whichever comes first: the conversation, or the grace). */
  private snapshotsNow(): void {
    if (this.snapshotsWaiting !== undefined) {
      clearTimeout(this.snapshotsWaiting);
      this.snapshotsWaiting = undefined;
      void this.loadSnapshots();
    }
  }

  /** A Requirement page: reads the conversation, runs, trace and timers once, then lives on SSE. */
  openRequirement(id: string): Promise<void> {
    let opened = this.opening.get(id);
    if (!opened) {
      opened = this.openNow(id).finally(() => this.opening.delete(id));
      this.opening.set(id, opened);
    }
    return opened;
  }

  private async openNow(id: string): Promise<void> {
    const fresh = this.conversations.open(id);
    this.runs.openTrace(id);
    if (!fresh) {
      return this.requirements.read(id).catch(() => undefined);
    }
    // The conversation's length is guessed from the Requirement (see ConversationStore.read): on
    // a deep link read it first. From a board it is known. The newest message pages go out alone,
    // and the rest of the page (the Requirement again, its runs and timers) once they are in, so
    // the server answers what the reader sees first before anything else.
    const known = this.requirements.requirements().get(id) !== undefined;
    try {
      if (!known) {
        await this.requirements.read(id);
      }
      let alongside: Promise<unknown> | undefined;
      const readAlongside = () => {
        alongside ??= Promise.all([
          known ? this.requirements.read(id) : null,
          this.runs.readRuns(id),
          this.timers.readTimers(id),
        ]);
      };
      const conversation = this.conversations.read(id, 0, readAlongside).finally(readAlongside);
      await Promise.all([
        conversation,
        conversation.then(
          () => alongside,
          () => alongside,
        ),
      ]);
    } finally {
      this.snapshotsNow();
    }
    void this.runs.readTrace(id);
  }

  /** After a gap without a cursor: re-read the lists, and what is new in opened conversations. */
  private async resync(): Promise<void> {
    await this.loadSnapshots();
    for (const { requirementId: id, lastSequence } of this.conversations.opened()) {
      void this.conversations.read(id, lastSequence).catch(() => undefined);
      void this.runs.readRuns(id).catch(() => undefined);
      void this.runs.readTrace(id).catch(() => undefined);
    }
  }

  private loadSnapshots(): Promise<void> {
    return this.requirements.reload(() => [
      this.pullRequests.readPullRequests(),
      this.timers.readTimers(),
      this.usage.read(),
      this.landing.readQueue(),
      this.attention.read().catch(() => undefined),
    ]);
  }

  private onEvent(event: ManagerEvent): void {
    const changes = this.live.apply(event);
    for (const store of this.stores) {
      store.sync(changes);
    }
    // `manager.reconciled`: these payloads were incomplete, read them again.
    for (const id of changes.repair ?? []) {
      void this.requirements.read(id).catch(() => undefined);
    }
  }
}

/** A path segment as the router hands it to the page (`%5F` is `_`); a malformed one as it is. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
