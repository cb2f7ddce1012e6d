import { Injectable, signal } from '@angular/core';

export interface Toast {
  id: number;
  kind: 'error' | 'info';
  text: string;
  /** What else there is to it (behind a toggle): the rest of a long error, its status. */
  detail: string;
}

const OPT_OUT_KEY = 'am.notifications';

/** In-page toasts and, for finished runs, browser notifications (opt-out remembered). */
@Injectable({ providedIn: 'root' })
export class Notifier {
  private readonly list = signal<Toast[]>([]);
  readonly toasts = this.list.asReadonly();
  readonly browserEnabled = signal(localStorage.getItem(OPT_OUT_KEY) !== 'off');
  private ids = 0;

  error(text: string, detail = ''): void {
    this.push('error', text, detail);
  }

  info(text: string): void {
    this.push('info', text);
  }

  dismiss(id: number): void {
    this.list.update((all) => all.filter((t) => t.id !== id));
  }

  setBrowserEnabled(on: boolean): void {
    this.browserEnabled.set(on);
    localStorage.setItem(OPT_OUT_KEY, on ? 'on' : 'off');
    if (on && typeof Notification !== 'undefined' && Notification.permission === 'default') {
      void Notification.requestPermission();
    }
  }

  /**
   * Asks for the browser's permission the first time someone sets an agent to work (a click, so
   * the browser shows its prompt), unless notifications were turned off.
   */
  askPermission(): void {
    if (this.browserEnabled() && typeof Notification !== 'undefined' && Notification.permission === 'default') {
      void Notification.requestPermission();
    }
  }

  /** A desktop notification when allowed; quietly nothing otherwise. One `tag` replaces its own earlier one. */
  desktop(title: string, body: string, onClick?: () => void, tag = title): void {
    if (!this.browserEnabled() || typeof Notification === 'undefined' || Notification.permission !== 'granted') {
      return;
    }
    const n = new Notification(title, { body, tag });
    if (onClick) {
      n.onclick = () => {
        window.focus();
        onClick();
      };
    }
  }

  private push(kind: Toast['kind'], text: string, detail = ''): void {
    const id = ++this.ids;
    this.list.update((all) => [...all.slice(-3), { detail, id, kind, text }]);
    // An error with details stays until dismissed: someone may be reading them.
    if (kind === 'info' || detail === '') {
      setTimeout(() => this.dismiss(id), kind === 'error' ? 8000 : 4000);
    }
  }
}
