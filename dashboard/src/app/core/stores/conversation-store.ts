import { Injectable, inject, signal, type Signal, type WritableSignal } from '@angular/core';

import { Api } from '../api';
import type { Changes } from '../live/live-state';
import type { Attachment, Message, Reply } from '../api-types';
import { RequirementsStore } from './requirements-store';
import { LIVE_STATE } from './live-state-token';

/** How many message pages are fetched at once (sequences are gap-free, so pages can be guessed). */
const PARALLEL_PAGES = 4;

/** The conversation of each Requirement someone opened (events for the others are not kept). */
@Injectable({ providedIn: 'root' })
export class ConversationStore {
  private readonly api = inject(Api);
  private readonly live = inject(LIVE_STATE);
  private readonly requirements = inject(RequirementsStore);
  private readonly sigs = new Map<string, WritableSignal<readonly Message[]>>();

  /** The messages in sequence order (empty until the conversation is opened and read). */
  messages(requirementId: string): Signal<readonly Message[]> {
    return this.signalFor(requirementId).asReadonly();
  }

  /** Keeps the conversation from now on (events merge into it); true when it holds nothing yet. */
  open(requirementId: string): boolean {
    const fresh =
      !this.live.conversations.has(requirementId) || this.live.conversation(requirementId).items.length === 0;
    this.live.conversation(requirementId);
    return fresh;
  }

  /** The opened conversations and the last sequence each holds (what a resync reads after). */
  opened(): { requirementId: string; lastSequence: number }[] {
    return [...this.live.conversations].map(([requirementId, log]) => ({
      lastSequence: log.items[log.items.length - 1]?.sequence ?? 0,
      requirementId,
    }));
  }

  /** Publishes what an event changed (LiveSync calls this after the merge). */
  sync(changes: Changes): void {
    for (const id of changes.conversations ?? []) {
      this.publish(id);
    }
  }

  /**
   * The whole conversation after `from`. Sequences are gap-free, so every page's start is known
   * in advance. The session's last sequence is the conversation's length (as of the snapshot):
   * all those pages are requested at once, newest first, so the latest messages (what the reader
   * sees first) arrive first and each page shows as it lands; waves continue if the guess was short.
   * The pages of the newest two pages' worth of messages (more than the conversation first shows)
   * go out alone, the rest once they are in: sent together, the 26 pages of a 5,000-message
   * conversation shared the server and the latest one landed with the last of them.
   * `onNewest`: called once those are in.
   */
  async read(id: string, from = 0, onNewest?: () => void): Promise<void> {
    const log = this.live.conversation(id);
    const size = this.api.pageSize;
    const session = this.live.requirements.get(id)?.session;
    const known = Math.max(0, (session?.lastMessageSequence ?? 0) - from);
    let next = 0;
    for (let wave = 0; ; wave++) {
      const count = wave === 0 ? Math.max(PARALLEL_PAGES, Math.ceil(known / size) + 1) : PARALLEL_PAGES;
      const starts = Array.from({ length: count }, (_, i) => from + (next + i) * size).reverse();
      next += count;
      const readPage = (afterSequence: number) =>
        this.api
          .call(
            this.api.client.GET('/api/requirements/{id}/messages', {
              params: { path: { id }, query: { afterSequence, limit: size } },
            }),
          )
          .then((page) => {
            if (log.add(page.items) > 0) {
              this.publish(id);
            }
            return page;
          });
      const ahead = wave === 0 ? starts.filter((start) => start >= from + known - 2 * size).length : starts.length;
      const newest = await Promise.all(starts.slice(0, ahead).map(readPage));
      onNewest?.();
      onNewest = undefined;
      const pages = [...newest, ...(await Promise.all(starts.slice(ahead).map(readPage)))];
      if (pages.some((p) => p.items.length < size)) {
        return;
      }
    }
  }

  /**
   * Sends a message (it queues while a run works). The message itself arrives as an event; the
   * Requirement it answers with merges as a snapshot. `queued`: it waits for the current run.
   */
  async reply(requirementId: string, body: Reply): Promise<{ queued: boolean; message: Message }> {
    const result = await this.api.call(
      this.api.client.POST('/api/requirements/{id}/reply', { body, params: { path: { id: requirementId } } }),
    );
    this.requirements.accept(result.requirement);
    return { message: result.message, queued: result.queued };
  }

  /** Uploads one file for the next message. */
  upload(requirementId: string, file: File): Promise<Attachment> {
    return this.api.call(
      this.api.client.POST('/api/requirements/{id}/attachments', {
        // The raw file is the body; openapi-fetch must not JSON-encode it.
        body: file as unknown as string,
        bodySerializer: (b: unknown) => b as BodyInit,
        headers: { 'Content-Type': file.type || 'application/octet-stream' },
        params: { header: { 'X-File-Name': encodeURIComponent(file.name) }, path: { id: requirementId } },
      }),
    );
  }

  private publish(id: string): void {
    this.signalFor(id).set(this.live.conversation(id).items);
  }

  private signalFor(id: string): WritableSignal<readonly Message[]> {
    let s = this.sigs.get(id);
    if (!s) {
      s = signal<readonly Message[]>([]);
      this.sigs.set(id, s);
    }
    return s;
  }
}
