import { ChangeDetectionStrategy, Component, computed, effect, inject, input, signal, untracked } from '@angular/core';
import { takeUntilDestroyed } from '@angular/core/rxjs-interop';

import type { Editor, EditorApp, Preview } from '@libs/contracts';

import { Api, ApiError } from '../core/api';
import type { Requirement } from '../core/api-types';
import { I18n, keyOf } from '../core/i18n';
import { Notifier } from '../core/notifier';
import { EventStream } from '../core/event-stream';
import { TerminalPanel } from './terminal-panel';

/** Output lines the strip shows (the rest: GET …/preview/output). */
const SHOWN_LINES = 200;

/** The editors found on the manager's machine: asked once per page load (they change rarely); a failed ask is asked again. */
let editorsOnce: Promise<{ items: Editor[]; local: boolean }> | null = null;

/**
 * Where a Requirement works, at a glance (issue 48 §1): the working copy's path (copy, open in an
 * editor on this machine, a vscode:// link), its branch and base, ahead/behind, uncommitted work,
 * its reserved ports and how it is made.
 */
@Component({
  selector: 'am-worktree-strip',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [TerminalPanel],
  template: `
    @if (requirement().worktree; as w) {
      <section class="panel worktree-strip" data-testid="worktree-strip" [attr.aria-label]="t('strip.title')">
        <div class="strip-path">
          @if (w.path) {
            <code data-testid="strip-path" [title]="w.path">{{ w.path }}</code>
            <button type="button" class="small" (click)="copy(w.path)" data-testid="strip-copy">
              {{ t('strip.copy') }}
            </button>
          } @else {
            <span class="muted" data-testid="strip-removed">{{ t('strip.removed') }}</span>
          }
        </div>
        <div class="strip-facts">
          @if (w.branch) {
            <span data-testid="strip-branch"
              ><span class="muted">{{ t('strip.branch') }}</span> <code>{{ w.branch }}</code></span
            >
          }
          @if (w.baseRef) {
            <span data-testid="strip-base"
              ><span class="muted">{{ t('strip.base') }}</span> <code>{{ w.baseRef }}</code></span
            >
          }
          <span data-testid="strip-ahead" [attr.data-ahead]="w.ahead" [attr.data-behind]="w.behind">{{
            t('strip.aheadBehind', { a: w.ahead, b: w.behind })
          }}</span>
          @if (w.dirty) {
            <span class="badge warn" data-testid="strip-dirty">{{ t('strip.dirty') }}</span>
          }
          @if (w.ports; as p) {
            <span data-testid="strip-ports" [attr.data-first]="p.first"
              ><span class="muted">{{ t('strip.ports') }}</span>
              <code>{{ p.first }}–{{ p.first + p.count - 1 }}</code></span
            >
          }
          <span class="muted" data-testid="strip-layout">{{ t(layoutKey()) }}</span>
        </div>
        @if (w.path) {
          <div class="strip-open">
            @for (e of editors(); track e.app) {
              <button
                type="button"
                class="small"
                (click)="open(e.app)"
                [attr.data-app]="e.app"
                data-testid="strip-open"
              >
                {{ t('strip.openIn', { app: e.label }) }}
              </button>
            }
            @if (local()) {
              <a class="small" [href]="vscodeLink()" data-testid="strip-vscode-link">vscode://</a>
            }
            <button type="button" class="small" (click)="openTerminal()" data-testid="strip-terminal-open">
              {{ t('strip.terminal') }}
            </button>
          </div>
          <div class="strip-preview" data-testid="strip-preview" [attr.data-state]="preview()?.state ?? 'stopped'">
            @if (running()) {
              <button type="button" class="small" (click)="stopPreview()" data-testid="strip-preview-stop">
                {{ t('strip.previewStop') }}
              </button>
            } @else {
              <button type="button" class="small" (click)="startPreview()" data-testid="strip-preview-start">
                {{ t('strip.previewStart') }}
              </button>
            }
            @if (preview(); as p) {
              <span
                class="badge"
                [class.ok]="p.state === 'ready'"
                [class.warn]="p.state === 'exited'"
                data-testid="strip-preview-state"
                >{{ t(keyOf('strip.preview', p.state)) }}</span
              >
              @if (p.state === 'ready' && p.url && local()) {
                <a [href]="p.url" target="_blank" rel="noopener noreferrer" data-testid="strip-preview-link">{{
                  p.url
                }}</a>
              } @else if (p.state === 'ready' && p.url) {
                <code data-testid="strip-preview-url">{{ p.url }}</code>
              }
              @if (p.reason && !running()) {
                <span class="muted" data-testid="strip-preview-reason">{{ p.reason }}</span>
              }
            }
          </div>
          @if (lines().length > 0) {
            <details class="strip-output" [open]="preview()?.state === 'exited'">
              <summary>{{ t('strip.previewOutput', { n: lines().length }) }}</summary>
              <pre data-testid="strip-preview-output">{{ outputText() }}</pre>
            </details>
          }
          @for (key of terminals(); track key) {
            <am-terminal-panel [requirementId]="requirement().id" (closed)="closeTerminal(key)" />
          }
        }
      </section>
    }
  `,
  styles: `
    .worktree-strip {
      display: flex;
      flex-direction: column;
      gap: 4px;
      font-size: 0.9em;
      min-width: 0;
    }
    /* A label and its value: the template's whitespace between them is not kept. */
    .strip-facts .muted + code {
      margin-left: 0.3em;
    }
    .strip-path,
    .strip-facts,
    .strip-open {
      display: flex;
      flex-wrap: wrap;
      gap: 4px 10px;
      align-items: center;
      min-width: 0;
    }
    .strip-path code {
      overflow-wrap: anywhere;
      min-width: 0;
    }
    .strip-preview {
      display: flex;
      flex-wrap: wrap;
      gap: 4px 10px;
      align-items: center;
      min-width: 0;
    }
    .strip-preview a,
    .strip-preview .muted {
      overflow-wrap: anywhere;
      min-width: 0;
    }
    .strip-output pre {
      max-height: 16em;
      overflow: auto;
      margin: 4px 0 0;
      font-size: 0.85em;
      white-space: pre-wrap;
      overflow-wrap: anywhere;
    }
  `,
})
export class WorktreeStrip {
  readonly requirement = input.required<Requirement>();
  private readonly api = inject(Api);
  private readonly notifier = inject(Notifier);
  protected readonly t = inject(I18n).t;
  protected readonly editors = signal<Editor[]>([]);
  /** Whether this browser is at the manager's machine: a vscode:// link elsewhere names another machine's folder. */
  protected readonly local = signal(false);
  protected readonly layoutKey = computed(() => {
    const w = this.requirement().worktree;
    return w?.mode === 'in_place' ? 'strip.inPlace' : keyOf('strip.layout', w?.layout ?? 'pending');
  });
  /** Each segment encoded: a `#` or `?` in a folder's name must not end the link's path. */
  protected readonly vscodeLink = computed(
    () => `vscode://file${(this.requirement().worktree?.path ?? '').split('/').map(encodeURIComponent).join('/')}`,
  );

  private opening = false;
  /** The Requirement's preview (issue 48 §2), as last read or published, and its output lines. */
  protected readonly preview = signal<Preview | null>(null);
  protected readonly lines = signal<string[]>([]);
  protected readonly running = computed(() => {
    const state = this.preview()?.state;
    return state === 'starting' || state === 'ready';
  });
  protected readonly keyOf = keyOf;
  protected readonly outputText = computed(() => this.lines().join('\n'));
  private previewFor = '';
  /** The terminals open on this page (each its own shell; several at once). */
  protected readonly terminals = signal<number[]>([]);
  private terminalKeys = 0;

  constructor() {
    effect(() => {
      const id = this.requirement().id;
      const hasCopy = !!this.requirement().worktree?.path;
      untracked(() => {
        if (id !== this.previewFor && hasCopy) {
          this.previewFor = id;
          this.terminals.set([]);
          this.preview.set(null);
          this.lines.set([]);
          void this.readPreview(id);
        }
      });
    });
    inject(EventStream)
      .events$.pipe(takeUntilDestroyed())
      .subscribe((event) => {
        if (event === 'resync') {
          void this.readPreview(this.requirement().id);
          return;
        }
        if (event.requirementId !== this.requirement().id) {
          return;
        }
        if (event.type === 'preview.updated') {
          this.preview.set(event.payload.preview);
        } else if (event.type === 'preview.output') {
          this.lines.update((lines) => [...lines, ...event.payload.lines].slice(-SHOWN_LINES));
        }
      });
    editorsOnce ??= this.api.call(this.api.client.GET('/api/editors'), true).catch(() => {
      editorsOnce = null;
      return { items: [], local: false };
    });
    void editorsOnce.then((found) => {
      this.local.set(found.local);
      this.editors.set(found.local ? found.items : []);
    });
  }

  protected async copy(text: string): Promise<void> {
    const copied = await (navigator.clipboard?.writeText(text).then(
      () => true,
      () => false,
    ) ?? Promise.resolve(false));
    if (copied) {
      this.notifier.info(this.t('strip.copied'));
    } else {
      this.notifier.error(this.t('strip.copyFailed'), text);
    }
  }

  /**
   * Opens the working copy; when the agent left settings there that an editor may run (hooks,
   * tasks, git's program settings), the server names them and the person decides.
   */
  protected async open(app: EditorApp): Promise<void> {
    if (this.opening) {
      return; // a double click opens one window
    }
    this.opening = true;
    try {
      const opened = await this.ask(app, false).catch(async (err: unknown) => {
        if (err instanceof ApiError && err.code === 'worktree_untrusted') {
          if (!confirm(this.t('strip.untrusted', { list: err.details.join('\n') }))) {
            return null;
          }
          return this.ask(app, true);
        }
        throw err;
      });
      if (opened) {
        this.notifier.info(this.t('strip.opened', { app: opened.label }));
      }
    } catch (err) {
      this.notifier.error(err instanceof Error ? err.message : String(err));
    } finally {
      this.opening = false;
    }
  }

  private async readPreview(id: string): Promise<void> {
    try {
      const [preview, output] = await Promise.all([
        this.api.call(this.api.client.GET('/api/requirements/{id}/preview', { params: { path: { id } } })),
        this.api.call(this.api.client.GET('/api/requirements/{id}/preview/output', { params: { path: { id } } })),
      ]);
      if (id === this.requirement().id) {
        this.preview.set(preview);
        this.lines.set(output.lines.slice(-SHOWN_LINES));
      }
    } catch {
      // Shown as never started: the button still works, and says what went wrong.
    }
  }

  protected openTerminal(): void {
    this.terminals.update((keys) => [...keys, ++this.terminalKeys]);
  }

  protected closeTerminal(key: number): void {
    this.terminals.update((keys) => keys.filter((k) => k !== key));
  }

  protected async startPreview(): Promise<void> {
    const id = this.requirement().id;
    try {
      this.lines.set([]);
      this.preview.set(
        await this.api.call(this.api.client.POST('/api/requirements/{id}/preview', { params: { path: { id } } }), true),
      );
    } catch (err) {
      this.notifier.error(err instanceof Error ? err.message : String(err));
    }
  }

  protected async stopPreview(): Promise<void> {
    const id = this.requirement().id;
    try {
      this.preview.set(
        await this.api.call(
          this.api.client.DELETE('/api/requirements/{id}/preview', { params: { path: { id } } }),
          true,
        ),
      );
    } catch (err) {
      this.notifier.error(err instanceof Error ? err.message : String(err));
    }
  }

  private ask(app: EditorApp, confirmed: boolean): Promise<Editor> {
    return this.api.call(
      this.api.client.POST('/api/requirements/{id}/open', {
        body: { app, confirm: confirmed },
        params: { path: { id: this.requirement().id } },
      }),
      true,
    );
  }
}
