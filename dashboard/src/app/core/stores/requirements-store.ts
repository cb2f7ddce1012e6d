import { Injectable, computed, inject, signal } from '@angular/core';

import type { BoardRunnerStatus, RequirementRunner } from '@libs/contracts';

import { Api } from '../api';
import type { Changes } from '../live/live-state';
import type {
  CreateRequirement,
  EditedRequirement,
  Reply,
  Requirement,
  SetDependencies,
  UpdateRequirement,
} from '../api-types';
import { cutoffFor, type CreatedWindow } from './created-window';
import { LIVE_STATE } from './live-state-token';

/** Requirements in the first page the board asks for. */
const FIRST_PAGE = 60;

/**
 * Requirements with their embedded sessions, and the board's created-time window: they are read
 * newest first and only as far back as the window needs.
 */
@Injectable({ providedIn: 'root' })
export class RequirementsStore {
  private readonly api = inject(Api);
  private readonly live = inject(LIVE_STATE);
  private readonly requirementsSig = signal<ReadonlyMap<string, Requirement>>(new Map());
  private readonly loadingSig = signal(true);
  private readonly windowSig = signal<CreatedWindow>('7d');
  private readonly runnersSig = signal<ReadonlyMap<string, BoardRunnerStatus>>(new Map());
  /** GET /api/workspace, asked once: this manager's runner on its board and its person (see ownRunnerId). */
  private workspaceRead: Promise<{ runnerId: string | null; person: { id: string } } | null> | undefined;
  /** How far back the pages have been read (the cursor of the next one; null: all read). */
  private cursor: string | null | undefined;
  private loadedBack: string | null = new Date().toISOString();
  private reading: Promise<void> = Promise.resolve();

  readonly requirements = this.requirementsSig.asReadonly();
  readonly loading = this.loadingSig.asReadonly();
  readonly window = this.windowSig.asReadonly();
  /** Every Requirement embeds its session: the Sessions board needs no separate list. */
  readonly sessions = computed(() =>
    [...this.requirementsSig().values()].map((r) => ({ requirement: r, session: r.session })),
  );

  /** Publishes what an event changed (LiveSync calls this after the merge). */
  sync(changes: Changes): void {
    if (changes.requirements) {
      this.publish();
    }
    if (changes.runners) {
      this.runnersSig.set(new Map(changes.runners.map((r) => [r.id, r])));
    }
  }

  /**
   * Team mode: a Requirement's runner as the board last said (`board.runners_changed`): a runner
   * going offline changes no Requirement, so its snapshot's `online` may be older than this.
   */
  runnerOf(r: Requirement): RequirementRunner | null {
    return r.runner === null ? null : (this.runnersSig().get(r.runner.id) ?? r.runner);
  }

  /**
   * Reads the board again from the newest page. "Loading" lasts until the first new page shows,
   * or until this and `alongside` (the other boards' snapshots) have all settled.
   */
  async reload(alongside: () => readonly Promise<unknown>[] = () => []): Promise<void> {
    this.loadingSig.set(true);
    this.cursor = undefined;
    this.loadedBack = new Date().toISOString();
    // The board's first page goes out alone and `alongside` once it is in (or failed): those
    // reads are not on the first paint, and in parallel they shared the server with it (a cold
    // first page took a second behind the usage totals). Each part shows as soon as it arrives,
    // and one failing (already reported) does not hide the others.
    let others: readonly Promise<unknown>[] | undefined;
    const startOthers = () => {
      others ??= alongside();
    };
    await Promise.allSettled([this.readPages(cutoffFor(this.windowSig()), startOthers).finally(startOthers)]);
    await Promise.allSettled(others ?? []);
    this.loadingSig.set(false);
  }

  /** Widens the created-time window, reading older pages only when needed. */
  async setWindow(window: CreatedWindow): Promise<void> {
    this.windowSig.set(window);
    // One reader at a time: the pages share one cursor.
    await this.reading;
    const cutoff = cutoffFor(window);
    if (this.cursor !== null && (cutoff === null || (this.loadedBack !== null && cutoff < this.loadedBack))) {
      this.loadingSig.set(true);
      await this.readPages(cutoff).finally(() => this.loadingSig.set(false));
    }
  }

  /** One Requirement read again (quietly: a deep link to a purged one is the page's to say). */
  async read(id: string): Promise<void> {
    this.accept(await this.api.call(this.api.client.GET('/api/requirements/{id}', { params: { path: { id } } }), true));
  }

  async create(body: CreateRequirement): Promise<EditedRequirement> {
    const created = await this.api.call(this.api.client.POST('/api/requirements', { body }));
    this.accept(created);
    return created;
  }

  async start(id: string, body: Reply = {}): Promise<void> {
    const result = await this.api.call(
      this.api.client.POST('/api/requirements/{id}/start', { body, params: { path: { id } } }),
    );
    this.accept(result.requirement);
  }

  /** Its effect (the session's state) arrives as events. */
  async interrupt(id: string, mode: 'stop' | 'steer'): Promise<void> {
    await this.api.call(
      this.api.client.POST('/api/requirements/{id}/interrupt', { body: { mode }, params: { path: { id } } }),
    );
  }

  async confirm(id: string): Promise<void> {
    this.accept(
      await this.api.call(this.api.client.POST('/api/requirements/{id}/confirm', { params: { path: { id } } })),
    );
  }

  /** A person's edit (title, description and provider only while todo). */
  async update(id: string, body: UpdateRequirement): Promise<EditedRequirement> {
    const updated = await this.api.call(
      this.api.client.PATCH('/api/requirements/{id}', { body, params: { path: { id } } }),
    );
    this.accept(updated);
    return updated;
  }

  /** A new todo Requirement copied from this one (with the given fields changed). */
  async fork(id: string, body: UpdateRequirement): Promise<Requirement> {
    const forked = await this.api.call(
      this.api.client.POST('/api/requirements/{id}/fork', { body, params: { path: { id } } }),
    );
    this.accept(forked);
    return forked;
  }

  /** Replaces what it waits for (PUT …/dependencies). */
  async setDependencies(id: string, body: SetDependencies): Promise<void> {
    this.accept(
      await this.api.call(
        this.api.client.PUT('/api/requirements/{id}/dependencies', { body, params: { path: { id } } }),
      ),
    );
  }

  /** Gives up a Requirement: answers once its run is stopped. */
  async cancel(id: string): Promise<void> {
    this.accept(
      await this.api.call(this.api.client.POST('/api/requirements/{id}/cancel', { params: { path: { id } } })),
    );
  }

  /** Team mode: to this manager's runner (the server fetches its branch and goes on here). */
  async move(id: string): Promise<void> {
    this.accept(
      (await this.api.call(this.api.client.POST('/api/requirements/{id}/move', { params: { path: { id } } })))
        .requirement,
    );
  }

  /** This manager's runner on its board, or null off a board (asked once). */
  async ownRunnerId(): Promise<string | null> {
    return (await this.workspace())?.runnerId ?? null;
  }

  /** The person this dashboard acts as, or null when the workspace could not be read (asked once). */
  async ownPersonId(): Promise<string | null> {
    return (await this.workspace())?.person.id ?? null;
  }

  private workspace(): Promise<{ runnerId: string | null; person: { id: string } } | null> {
    this.workspaceRead ??= this.api.call(this.api.client.GET('/api/workspace'), true).catch(() => {
      this.workspaceRead = undefined; // asked again next time
      return null;
    });
    return this.workspaceRead;
  }

  /** The purge event that follows removes it (with its tombstone). */
  async remove(id: string): Promise<void> {
    await this.api.call(this.api.client.DELETE('/api/requirements/{id}', { params: { path: { id } } }));
  }

  /**
   * Applies a Requirement a mutation answered with (here or in another store), as a snapshot: it
   * shows at once when it is newer than what the page holds, and loses a tie, since its own event
   * follows on the stream (an answer can land after events that overtook it: a start's after its
   * run already failed).
   */
  accept(requirement: Requirement): void {
    if (this.live.loadRequirements([requirement], 'snapshot')) {
      this.publish();
    }
  }

  /** Pages newest first until older than `cutoff`; each page shows as soon as it arrives. */
  private readPages(cutoff: string | null, onFirstPage?: () => void): Promise<void> {
    const read = this.reading.then(() => this.readPagesNow(cutoff, onFirstPage));
    this.reading = read.catch(() => undefined);
    return read;
  }

  private async readPagesNow(cutoff: string | null, onFirstPage?: () => void): Promise<void> {
    while (this.cursor !== null) {
      const cursor = this.cursor;
      // A small first page paints the board sooner (it fills the visible cards); then full pages.
      const limit = cursor === undefined ? FIRST_PAGE : this.api.pageSize;
      const page = await this.api.call(
        this.api.client.GET('/api/requirements', { params: { query: { cursor, limit } } }),
      );
      this.cursor = page.nextCursor ?? null;
      const last = page.items[page.items.length - 1];
      this.loadedBack = this.cursor === null ? null : (last?.createdAt ?? null);
      if (this.live.loadRequirements(page.items)) {
        this.publish();
        this.loadingSig.set(false);
      }
      onFirstPage?.();
      onFirstPage = undefined;
      if (cutoff !== null && last && last.createdAt < cutoff) {
        return;
      }
    }
  }

  private publish(): void {
    this.requirementsSig.set(this.live.requirements.items);
  }
}
