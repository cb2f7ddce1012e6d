import {
  ChangeDetectionStrategy,
  Component,
  ElementRef,
  OnDestroy,
  afterNextRender,
  inject,
  input,
  output,
  signal,
  viewChild,
} from '@angular/core';

import { Api } from '../core/api';
import { I18n } from '../core/i18n';

/** The part of xterm.js the panel uses (the module itself is loaded when a terminal opens). */
interface Screen {
  open(element: HTMLElement): void;
  write(data: Uint8Array | string): void;
  reset(): void;
  onData(listener: (data: string) => void): { dispose(): void };
  focus(): void;
  dispose(): void;
  readonly rows: number;
  readonly cols: number;
}

/**
 * One terminal on a Requirement's working copy (issue 48 §4): a shell in its agent's sandbox,
 * drawn by xterm.js (loaded on first use: the board never pays for it). Output comes as an event
 * stream of base64 frames; what is typed or pasted is sent in order; the size follows the panel.
 * Closing the panel, or leaving the page, closes the terminal.
 */
@Component({
  selector: 'am-terminal-panel',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <div class="terminal-head">
      <span class="muted" data-testid="terminal-state" [attr.data-state]="state()">{{ status() }}</span>
      <button type="button" class="small" (click)="closed.emit()" data-testid="terminal-close">
        {{ t('terminal.close') }}
      </button>
    </div>
    <div #screen class="terminal-screen" data-testid="terminal-screen"></div>
  `,
  styles: `
    :host {
      display: flex;
      flex-direction: column;
      gap: 4px;
      min-width: 0;
    }
    .terminal-head {
      display: flex;
      justify-content: space-between;
      align-items: center;
      gap: 8px;
    }
    .terminal-screen {
      height: 18em;
      min-width: 0;
      background: #111;
      padding: 4px;
      border-radius: 4px;
    }
  `,
})
export class TerminalPanel implements OnDestroy {
  readonly requirementId = input.required<string>();
  readonly closed = output<void>();
  private readonly api = inject(Api);
  protected readonly t = inject(I18n).t;
  private readonly screenElement = viewChild.required<ElementRef<HTMLElement>>('screen');
  protected readonly state = signal<'opening' | 'open' | 'closed'>('opening');
  protected readonly status = signal('');

  private screen: Screen | null = null;
  private stream: EventSource | null = null;
  private terminalId: string | null = null;
  private sending: Promise<unknown> = Promise.resolve();
  private resizeObserver: ResizeObserver | null = null;
  private destroyed = false;

  constructor() {
    this.status.set(this.t('terminal.opening'));
    afterNextRender(() => void this.open());
  }

  private async open(): Promise<void> {
    try {
      const [{ Terminal }, { FitAddon }] = await Promise.all([import('@xterm/xterm'), import('@xterm/addon-fit')]);
      if (this.destroyed) {
        return;
      }
      const screen = new Terminal({
        convertEol: false,
        cursorBlink: true,
        fontSize: 13,
        // A link the program prints (OSC 8) opens only if it is a web page, never another scheme.
        linkHandler: {
          activate: (_event: MouseEvent, uri: string) => {
            if (/^https?:\/\//i.test(uri)) {
              window.open(uri, '_blank', 'noopener,noreferrer');
            }
          },
        },
        scrollback: 5000,
      });
      const fit = new FitAddon();
      screen.loadAddon(fit);
      screen.open(this.screenElement().nativeElement);
      fit.fit();
      this.screen = screen;
      const terminal = await this.api.call(
        this.api.client.POST('/api/requirements/{id}/terminals', {
          body: { cols: screen.cols, rows: screen.rows },
          params: { path: { id: this.requirementId() } },
        }),
        true,
      );
      this.terminalId = terminal.id;
      if (this.destroyed) {
        void this.close();
        return;
      }
      this.stream = new EventSource(`/api/terminals/${encodeURIComponent(terminal.id)}/stream`);
      this.stream.onmessage = (message: MessageEvent<string>) => screen.write(decode(message.data));
      // Every (re)connection starts with the whole scrollback: the screen is cleared for it.
      this.stream.addEventListener('reset', () => screen.reset());
      this.stream.onerror = () => {
        if (this.stream?.readyState === EventSource.CLOSED && this.state() !== 'closed') {
          // The terminal is gone (the manager restarted, or it closed unseen): typing goes nowhere.
          this.state.set('closed');
          this.status.set(this.t('terminal.ended', { reason: this.t('terminal.lost') }));
        }
      };
      this.stream.addEventListener('closed', (message) => {
        this.stream?.close();
        this.state.set('closed');
        const reason = (JSON.parse((message as MessageEvent<string>).data) as { reason: string }).reason;
        this.status.set(this.t('terminal.ended', { reason }));
      });
      screen.onData((data) => this.send(data));
      this.resizeObserver = new ResizeObserver(() => {
        const before = `${screen.rows}x${screen.cols}`;
        fit.fit();
        if (`${screen.rows}x${screen.cols}` !== before && this.terminalId !== null && this.state() === 'open') {
          const id = this.terminalId;
          this.sending = this.sending.then(() =>
            this.api
              .call(
                this.api.client.POST('/api/terminals/{terminalId}/resize', {
                  body: { cols: screen.cols, rows: screen.rows },
                  params: { path: { terminalId: id } },
                }),
              )
              .catch(() => undefined),
          );
        }
      });
      this.resizeObserver.observe(this.screenElement().nativeElement);
      this.state.set('open');
      this.status.set(this.t('terminal.open'));
      screen.focus();
    } catch (err) {
      this.state.set('closed');
      this.status.set(err instanceof Error ? err.message : String(err));
    }
  }

  /** In the order typed: each request after the one before; a large paste in pieces the server takes. */
  private send(data: string): void {
    const id = this.terminalId;
    if (id === null || this.state() !== 'open') {
      return;
    }
    if (data.length > INPUT_PIECE) {
      for (let at = 0; at < data.length; at += INPUT_PIECE) {
        this.send(data.slice(at, at + INPUT_PIECE));
      }
      return;
    }
    this.sending = this.sending.then(() =>
      this.api
        .call(
          this.api.client.POST('/api/terminals/{terminalId}/input', {
            body: { data },
            params: { path: { terminalId: id } },
          }),
          true,
        )
        .catch(() => undefined),
    );
  }

  /** After what was typed before it (nothing typed is sent to a closed terminal). */
  private async close(): Promise<void> {
    const id = this.terminalId;
    this.terminalId = null;
    if (id !== null && this.state() !== 'closed') {
      this.state.set('closed');
      await this.sending;
      await this.api
        .call(this.api.client.DELETE('/api/terminals/{terminalId}', { params: { path: { terminalId: id } } }), true)
        .catch(() => undefined);
    }
  }

  ngOnDestroy(): void {
    this.destroyed = true;
    this.resizeObserver?.disconnect();
    this.stream?.close();
    void this.close();
    this.screen?.dispose();
  }
}

/** What one input request carries at most (the server's bound is 65,536 characters). */
const INPUT_PIECE = 60_000;

function decode(base64: string): Uint8Array {
  const text = atob(base64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    bytes[i] = text.charCodeAt(i);
  }
  return bytes;
}
