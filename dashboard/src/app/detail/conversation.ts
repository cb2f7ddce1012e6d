import {
  ChangeDetectionStrategy,
  Component,
  DestroyRef,
  ElementRef,
  afterNextRender,
  afterRenderEffect,
  computed,
  effect,
  inject,
  input,
  signal,
  untracked,
  viewChild,
} from '@angular/core';
import { RouterLink } from '@angular/router';

import { I18n, keyOf } from '../core/i18n';
import { isPending, isQueued } from '../core/live/queued';
import type { Message, Requirement, Run, Trace } from '../core/api-types';
import { ConversationStore } from '../core/stores/conversation-store';
import { RunsStore } from '../core/stores/runs-store';
import { MarkdownRenderer } from './markdown';
import { sourceText, systemText } from './system-text';

/** Messages rendered at first (more than a tall window shows); more are added as the reader scrolls up. */
const WINDOW = 30;
/** How close to the bottom still counts as "reading the latest". */
const STICK_PX = 48;

@Component({
  selector: 'am-conversation',
  imports: [RouterLink],
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <div
      class="messages"
      #scroller
      (scroll)="onScroll()"
      role="log"
      aria-live="polite"
      [attr.aria-label]="t('detail.conversation')"
      data-testid="messages"
      tabindex="0"
    >
      @if (hiddenBefore() > 0) {
        <button type="button" class="ghost small" style="align-self: center" (click)="showEarlier()">
          {{ t('action.earlier') }} ({{ hiddenBefore() }})
        </button>
      }
      @for (m of visible(); track m.id) {
        <article
          class="message"
          [class]="'message ' + m.author"
          [class.related]="!!m.sourceRequirementId"
          [attr.data-sequence]="m.sequence"
          [attr.data-author]="m.author"
          [attr.data-message-id]="m.id"
          [class.focused]="m.sequence === focused()"
        >
          <header>
            <!-- On a board several people use, a person's message says who wrote it (older messages: "You"). -->
            <strong data-testid="message-author" [attr.data-author-id]="m.authorId">{{
              m.authorName ?? t(keyOf('author', m.author))
            }}</strong>
            @if (m.source) {
              <span class="badge" data-testid="message-source">{{ t('msg.source', { s: sourceLabel(m) }) }}</span>
            }
            @if (m.sourceRequirementId) {
              <a class="badge warn" [routerLink]="['/requirements', m.sourceRequirementId]">{{ t('msg.related') }}</a>
            }
            @if (queued().has(m.id)) {
              <span class="badge warn" data-testid="queued-badge">{{ t('msg.queued') }}</span>
            }
            @if (pending().has(m.id)) {
              <span class="badge warn" data-testid="pending-badge" [title]="t('msg.pendingHint')">{{
                t('msg.pending')
              }}</span>
            }
            <span class="spacer"></span>
            <time [attr.datetime]="m.createdAt">{{ i18n.dateTime(m.createdAt) }}</time>
          </header>
          @if (systemText(m); as text) {
            <!-- Agent Manager's own words, in the reader's language (the English body is for agents). -->
            <div
              class="markdown"
              data-testid="system-text"
              [attr.data-code]="m.code"
              [innerHTML]="markdown.render(text)"
            ></div>
          } @else if (m.body) {
            <div class="markdown" [innerHTML]="markdown.render(m.body, m.id)"></div>
          }
          @if (m.attachments.length) {
            <div class="attachments">
              @for (a of m.attachments; track a.id) {
                @if (a.kind === 'image') {
                  <a [href]="'/api/attachments/' + a.id" target="_blank" rel="noopener"
                    ><img
                      [src]="'/api/attachments/' + a.id"
                      [alt]="a.fileName"
                      loading="lazy"
                      data-testid="attachment-image"
                  /></a>
                } @else {
                  <a
                    class="button"
                    [href]="'/api/attachments/' + a.id"
                    [attr.download]="a.fileName"
                    data-testid="attachment-file"
                    >⬇ {{ a.fileName }} <span class="muted">({{ size(a.byteSize) }})</span></a
                  >
                }
              }
            </div>
          }
        </article>
      } @empty {
        <p class="empty">{{ t('msg.empty') }}</p>
      }
      @if (unseen() > 0) {
        <button type="button" class="primary small jump" (click)="jumpToLatest()" data-testid="jump-latest">
          ↓ {{ t('action.jumpLatest') }} ({{ unseen() }})
        </button>
      }
    </div>
    @if (activeRun(); as run) {
      <!-- While the agent works: that it does, for how long, and its latest step, live from the trace. -->
      <div class="activity" role="status" data-testid="activity" [attr.data-run-id]="run.id">
        <span class="pulse" aria-hidden="true"></span>
        <strong>{{ t('activity.working', { d: elapsed(run.startedAt) }) }}</strong>
        @if (latestStep(); as step) {
          <span
            class="step"
            data-testid="activity-step"
            [class.tool]="step.runningTool"
            [attr.data-kind]="step.trace.kind"
            >{{
              step.runningTool
                ? t('activity.tool', { s: step.trace.title, d: elapsed(step.trace.createdAt) })
                : t('activity.step', { s: step.trace.title })
            }}</span
          >
        } @else {
          <span class="step muted">{{ t('activity.starting') }}</span>
        }
      </div>
    }
  `,
})
export class Conversation {
  readonly requirement = input.required<Requirement>();
  /** A message to bring into view and mark (from a search result), once it is loaded. */
  readonly focusSequence = input<number | null>(null);
  /** The RD run working now, if any (the activity line shows it). */
  readonly activeRun = input<Run | null>(null);
  protected readonly i18n = inject(I18n);
  protected readonly t = this.i18n.t;
  protected readonly keyOf = keyOf;
  protected readonly markdown = inject(MarkdownRenderer);
  private readonly conversations = inject(ConversationStore);
  private readonly runs = inject(RunsStore);
  private readonly scroller = viewChild.required<ElementRef<HTMLElement>>('scroller');

  private readonly messages = computed(() => this.conversations.messages(this.requirement().id)());
  /** How many of the latest messages are rendered. */
  private readonly count = signal(WINDOW);
  protected readonly visible = computed(() => {
    const all = this.messages();
    return all.slice(Math.max(0, all.length - this.count()));
  });
  protected readonly hiddenBefore = computed(() => Math.max(0, this.messages().length - this.count()));
  /** New messages that arrived while the reader was scrolled up. */
  protected readonly unseen = signal(0);

  protected readonly queued = computed(() => {
    const requirement = this.requirement();
    const active = [...this.runs.runs().values()].find(
      (r) => r.requirementId === requirement.id && r.status === 'running' && r.role === 'rd',
    );
    return new Set(
      this.visible()
        .filter((m) => isQueued(m, requirement, active))
        .map((m) => m.id),
    );
  });

  /** While a stop's pause lasts: what the next start will deliver. */
  protected readonly pending = computed(() => {
    const requirement = this.requirement();
    return new Set(
      this.visible()
        .filter((m) => isPending(m, requirement))
        .map((m) => m.id),
    );
  });

  /** The focused message once it was rendered (so it is scrolled to once, not on every update). */
  protected readonly focused = signal<number | null>(null);
  private scrollToFocus = false;
  /** Ticks once a second while a run is active, for the elapsed times. */
  private readonly now = signal(Date.now());

  /** The active run's latest trace step; a tool call without its result yet is a tool running. */
  protected readonly latestStep = computed<{ trace: Trace; runningTool: boolean } | null>(() => {
    const run = this.activeRun();
    if (!run) {
      return null;
    }
    const trace = this.runs.trace(this.requirement().id)();
    let latest: Trace | null = null;
    const finished = new Set<string>();
    for (let i = trace.length - 1; i >= 0; i--) {
      const t = trace[i];
      if (!t || t.runId !== run.id) {
        continue;
      }
      if (t.kind === 'tool_result' && t.toolCallId) {
        finished.add(t.toolCallId);
      }
      if (!latest && t.kind !== 'tool_result') {
        latest = t;
      }
    }
    return latest
      ? {
          runningTool: latest.kind === 'tool_call' && !!latest.toolCallId && !finished.has(latest.toolCallId),
          trace: latest,
        }
      : null;
  });

  private atBottom = true;
  private lastScrollTop = 0;
  private lastSequence = 0;
  /** Set before rendering older messages above, so the reader's view does not jump. */
  private anchor: number | null = null;

  constructor() {
    effect((onCleanup) => {
      if (this.activeRun()) {
        const timer = setInterval(() => this.now.set(Date.now()), 1000);
        onCleanup(() => clearInterval(timer));
      }
    });
    effect(() => {
      const all = this.messages();
      untracked(() => {
        // Only messages after the last one seen are new to the reader; older pages that land
        // while a long conversation loads are history, not news.
        let added = 0;
        for (let i = all.length - 1; i >= 0 && (all[i]?.sequence ?? 0) > this.lastSequence; i--) {
          added++;
        }
        if (this.lastSequence > 0 && added > 0 && !this.atBottom) {
          // Keep what the reader looks at: widen the window instead of sliding it.
          this.count.update((c) => c + added);
          this.unseen.update((n) => n + added);
        }
        this.lastSequence = all[all.length - 1]?.sequence ?? 0;
      });
    });
    effect(() => {
      const sequence = this.focusSequence();
      const all = this.messages();
      untracked(() => {
        const index = sequence === null ? -1 : all.findIndex((m) => m.sequence === sequence);
        if (index < 0 || this.focused() === sequence) {
          return;
        }
        // Render from the focused message on, and stop following the latest.
        this.count.update((c) => Math.max(c, all.length - index));
        this.atBottom = false;
        this.focused.set(sequence);
        this.scrollToFocus = true;
      });
    });
    // Following the latest is not only about new messages: the conversation's box shrinks when the
    // "agent is working" bar or the composer's chips appear, and a message grows when its image
    // decodes or a badge changes. Any of these left the latest message cut off at the bottom (or
    // behind the bar) without a scroll event to notice it; while the reader is at the bottom,
    // every such resize puts them back there.
    const destroyRef = inject(DestroyRef);
    afterNextRender(() => {
      if (typeof ResizeObserver !== 'function') {
        return;
      }
      const el = this.scroller().nativeElement;
      this.resizes = new ResizeObserver(() => this.stickToBottom());
      this.observeSizes(el);
      const onLoad = () => this.stickToBottom();
      el.addEventListener('load', onLoad, true);
      destroyRef.onDestroy(() => {
        this.resizes?.disconnect();
        el.removeEventListener('load', onLoad, true);
      });
    });
    afterRenderEffect({
      write: () => {
        this.visible();
        const el = this.scroller().nativeElement;
        this.observeSizes(el);
        if (this.scrollToFocus) {
          this.scrollToFocus = false;
          el.querySelector(`[data-sequence="${this.focused()}"]`)?.scrollIntoView({ block: 'center' });
        } else if (this.anchor !== null) {
          el.scrollTop += el.scrollHeight - this.anchor;
          this.anchor = null;
        } else if (this.atBottom) {
          el.scrollTop = el.scrollHeight;
          this.lastScrollTop = el.scrollTop;
        }
      },
    });
  }

  private resizes: ResizeObserver | null = null;

  /** Watches the scroller's own box and each rendered message (re-done after every render). */
  private observeSizes(el: HTMLElement): void {
    if (!this.resizes) {
      return;
    }
    this.resizes.disconnect();
    this.resizes.observe(el);
    for (const child of Array.from(el.children)) {
      this.resizes.observe(child);
    }
  }

  private stickToBottom(): void {
    if (this.atBottom && !this.scrollToFocus && this.anchor === null) {
      const el = this.scroller().nativeElement;
      el.scrollTop = el.scrollHeight;
      this.lastScrollTop = el.scrollTop;
    }
  }

  protected onScroll(): void {
    const el = this.scroller().nativeElement;
    if (el.scrollHeight - el.scrollTop - el.clientHeight < STICK_PX) {
      this.atBottom = true;
    } else if (el.scrollTop < this.lastScrollTop) {
      // Only the reader moving up stops the following. A scroll event can also arrive after the
      // content grew below (an image decoded, the working bar appeared) and before the resize
      // observer put the view back at the bottom: the reader did not move, so keep following.
      this.atBottom = false;
    }
    this.lastScrollTop = el.scrollTop;
    if (this.atBottom && this.unseen() > 0) {
      this.unseen.set(0);
    }
    if (el.scrollTop < 120 && this.hiddenBefore() > 0 && this.anchor === null) {
      this.showEarlier();
    }
  }

  protected showEarlier(): void {
    this.anchor = this.scroller().nativeElement.scrollHeight;
    this.count.update((c) => c + WINDOW);
  }

  protected jumpToLatest(): void {
    this.atBottom = true;
    this.unseen.set(0);
    this.count.set(WINDOW);
    const el = this.scroller().nativeElement;
    el.scrollTop = el.scrollHeight;
    this.lastScrollTop = el.scrollTop;
  }

  /** m:ss since a time (the run's start, a tool's call). */
  protected elapsed(fromIso: string): string {
    const s = Math.max(0, Math.floor((this.now() - Date.parse(fromIso)) / 1000));
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  }

  protected sourceLabel(m: Message): string {
    return sourceText(m, this.i18n);
  }

  /** Read in the template, so it follows the language signal. */
  protected systemText(m: Message): string | null {
    return systemText(m, this.i18n);
  }

  protected size(bytes: number): string {
    return bytes < 1024
      ? `${bytes} B`
      : bytes < 1048576
        ? `${(bytes / 1024).toFixed(0)} KB`
        : `${(bytes / 1048576).toFixed(1)} MB`;
  }
}
