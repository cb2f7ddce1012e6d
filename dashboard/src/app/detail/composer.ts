import { ChangeDetectionStrategy, Component, DestroyRef, computed, inject, input, signal } from '@angular/core';

import { I18n } from '../core/i18n';
import { isQueued } from '../core/live/queued';
import {
  MAX_ATTACHMENTS,
  type Attachment,
  type Message,
  type Reply,
  type Requirement,
  type Run,
} from '../core/api-types';
import { Notifier } from '../core/notifier';
import { ConversationStore } from '../core/stores/conversation-store';

/** The phone layout's width (styles.css) or a touch screen as the only pointer. */
const COMPACT_QUERY = '(max-width: 640px), (pointer: coarse) and (hover: none)';

interface Pending {
  key: number;
  file: File;
  /** An object URL for an image preview. */
  preview: string | null;
  attachment: Attachment | null;
  failed: boolean;
}

/**
 * Text plus up to six attachments (picker, paste or drop). Files upload as soon as they are
 * chosen, so sending is one small JSON call; it works while a run is active (the message queues).
 */
@Component({
  selector: 'am-composer',
  changeDetection: ChangeDetectionStrategy.OnPush,
  host: { '(dragover)': 'onDragOver($event)', '(dragleave)': 'dragging.set(false)', '(drop)': 'onDrop($event)' },
  template: `
    <form class="composer" [class.dragging]="dragging()" (submit)="onSend($event)" data-testid="composer">
      <label>
        <span class="sr-only">{{ t('composer.label') }}</span>
        <textarea
          rows="3"
          [disabled]="closed()"
          [attr.aria-describedby]="closed() ? 'composer-closed' : null"
          [placeholder]="closed() ? '' : t(compact() ? 'composer.placeholderTouch' : 'composer.placeholder')"
          [value]="text()"
          (input)="text.set($any($event.target).value)"
          (keydown)="onKey($event)"
          (paste)="onPaste($event)"
          data-testid="composer-text"
          [attr.aria-label]="t('composer.label')"
        ></textarea>
      </label>
      @if (pending().length) {
        <div class="chips">
          @for (p of pending(); track p.key) {
            <span class="chip" [class.error]="p.failed" data-testid="pending-attachment">
              @if (p.preview) {
                <img [src]="p.preview" alt="" />
              }
              {{ p.file.name }}
              @if (!p.attachment && !p.failed) {
                <span class="muted">{{ t('composer.uploading') }}</span>
              }
              <button
                type="button"
                class="ghost small"
                (click)="remove(p)"
                [attr.aria-label]="t('action.remove') + ' ' + p.file.name"
              >
                ✕
              </button>
            </span>
          }
        </div>
      }
      @if (closed()) {
        <!-- Why nothing can be written here, rather than a Send that is disabled without a word. -->
        <p class="muted hint" id="composer-closed" data-testid="composer-closed">{{ t('composer.cancelled') }}</p>
      }
      <div class="row">
        <label class="button" style="flex-direction: row" [class.disabled]="closed()">
          {{ t('action.attach') }}
          <input
            type="file"
            multiple
            class="sr-only"
            [disabled]="closed()"
            (change)="onPick($event)"
            data-testid="composer-file"
          />
        </label>
        @if (queuedNote()) {
          <span class="badge warn" role="status" data-testid="queued-note">{{ t('composer.queued') }}</span>
        }
        <span class="spacer"></span>
        <button
          type="submit"
          class="primary"
          [disabled]="!canSend()"
          [title]="closed() ? t('composer.cancelled') : ''"
          data-testid="composer-send"
        >
          {{ t('action.send') }}
        </button>
      </div>
    </form>
  `,
})
export class Composer {
  readonly requirement = input.required<Requirement>();
  /** The RD run at work, if any: what it took as input is no longer queued. */
  readonly activeRun = input<Run | null>(null);
  private readonly store = inject(ConversationStore);
  private readonly notifier = inject(Notifier);
  protected readonly t = inject(I18n).t;
  protected readonly text = signal('');
  protected readonly pending = signal<Pending[]>([]);
  protected readonly dragging = signal(false);
  protected readonly busy = signal(false);
  /**
   * Shown after a reply that waits for the current run, and only while it waits: once a run took
   * it (the next run, or a steer) the note would say something no longer true.
   */
  protected readonly queuedNote = computed(() => {
    const message = this.lastQueued();
    return !!message && isQueued(message, this.requirement(), this.activeRun() ?? undefined);
  });
  private readonly lastQueued = signal<Message | null>(null);
  /** A cancelled Requirement takes no more messages (the server refuses them). */
  protected readonly closed = computed(() => this.requirement().status === 'cancelled');
  private keys = 0;
  /**
   * A phone (narrow, or a touch screen without a fine pointer) has no Ctrl+Enter and nothing to
   * drop files from: its placeholder does not offer them. Follows the window as it changes.
   */
  protected readonly compact = signal(false);

  protected readonly canSend = computed(
    () =>
      !this.busy() &&
      !this.closed() &&
      this.pending().every((p) => p.attachment || p.failed) &&
      (this.text().trim().length > 0 || this.pending().some((p) => p.attachment)),
  );

  constructor() {
    const destroyRef = inject(DestroyRef);
    destroyRef.onDestroy(() => this.pending().forEach((p) => p.preview && URL.revokeObjectURL(p.preview)));
    const query = typeof matchMedia === 'function' ? matchMedia(COMPACT_QUERY) : null;
    if (query) {
      const update = () => this.compact.set(query.matches);
      update();
      query.addEventListener('change', update);
      destroyRef.onDestroy(() => query.removeEventListener('change', update));
    }
  }

  /**
   * What Start sends along. The draft stays until the caller says the start was accepted
   * (`clearDraft`): a refused start (a 409 for an unmet dependency, say) must not lose what the
   * person typed.
   */
  peekDraft(): Reply {
    return this.draft();
  }

  clearDraft(): void {
    this.clear();
  }

  protected onKey(event: KeyboardEvent): void {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      void this.onSend(event);
    }
  }

  protected onPick(event: Event): void {
    const input = event.target as HTMLInputElement;
    this.add(Array.from(input.files ?? []));
    input.value = '';
  }

  protected onPaste(event: ClipboardEvent): void {
    const files = Array.from(event.clipboardData?.files ?? []);
    if (files.length) {
      event.preventDefault();
      this.add(files);
    }
  }

  protected onDragOver(event: DragEvent): void {
    if (event.dataTransfer?.types.includes('Files')) {
      event.preventDefault();
      this.dragging.set(true);
    }
  }

  protected onDrop(event: DragEvent): void {
    this.dragging.set(false);
    const files = Array.from(event.dataTransfer?.files ?? []);
    if (files.length) {
      event.preventDefault();
      this.add(files);
    }
  }

  protected remove(p: Pending): void {
    if (p.preview) {
      URL.revokeObjectURL(p.preview);
    }
    this.pending.update((all) => all.filter((x) => x.key !== p.key));
  }

  protected async onSend(event: Event): Promise<void> {
    event.preventDefault();
    if (!this.canSend()) {
      return;
    }
    const id = this.requirement().id;
    const body = this.draft();
    this.busy.set(true);
    try {
      const { message, queued } = await this.store.reply(id, body);
      this.lastQueued.set(queued ? message : null);
      this.clear();
    } catch {
      // shown by the API service; the draft stays for another try
    } finally {
      this.busy.set(false);
    }
  }

  private draft(): Reply {
    const message = this.text().trim();
    const attachmentIds = this.pending().flatMap((p) => (p.attachment ? [p.attachment.id] : []));
    return { ...(message ? { message } : {}), ...(attachmentIds.length ? { attachmentIds } : {}) };
  }

  private clear(): void {
    this.text.set('');
    this.pending().forEach((p) => p.preview && URL.revokeObjectURL(p.preview));
    this.pending.set([]);
  }

  private add(files: File[]): void {
    const room = MAX_ATTACHMENTS - this.pending().length;
    if (files.length > room) {
      this.notifier.error(this.t('composer.tooMany', { n: MAX_ATTACHMENTS }));
    }
    for (const file of files.slice(0, Math.max(0, room))) {
      const item: Pending = {
        attachment: null,
        failed: false,
        file,
        key: ++this.keys,
        preview: file.type.startsWith('image/') ? URL.createObjectURL(file) : null,
      };
      this.pending.update((all) => [...all, item]);
      void this.upload(item);
    }
  }

  private async upload(item: Pending): Promise<void> {
    const id = this.requirement().id;
    try {
      const attachment = await this.store.upload(id, item.file);
      this.pending.update((all) => all.map((p) => (p.key === item.key ? { ...p, attachment } : p)));
    } catch {
      this.pending.update((all) => all.map((p) => (p.key === item.key ? { ...p, failed: true } : p)));
    }
  }
}
