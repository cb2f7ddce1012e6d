import { Injectable, computed, signal } from '@angular/core';

export type ThemeChoice = 'system' | 'light' | 'dark';
const KEY = 'am.theme';

/**
 * Follows the system by default; an explicit choice sets `data-theme` on <html>, which the CSS
 * variables in styles.css key on.
 */
@Injectable({ providedIn: 'root' })
export class Theme {
  readonly choice = signal<ThemeChoice>(this.saved());
  private readonly systemDark = signal(false);
  /**
   * The scheme on screen: what was chosen, or what the system prefers. For what draws its own
   * colours (diff2html's light and dark schemes) and cannot follow the CSS variables.
   */
  readonly effective = computed<'light' | 'dark'>(() => {
    const choice = this.choice();
    return choice === 'system' ? (this.systemDark() ? 'dark' : 'light') : choice;
  });

  constructor() {
    this.applyChoice(this.choice());
    const media = typeof matchMedia === 'function' ? matchMedia('(prefers-color-scheme: dark)') : null;
    if (media) {
      this.systemDark.set(media.matches);
      media.addEventListener('change', (event) => this.systemDark.set(event.matches));
    }
  }

  /** Cycles system → light → dark, so one button is enough. */
  cycle(): void {
    const next: ThemeChoice = this.choice() === 'system' ? 'light' : this.choice() === 'light' ? 'dark' : 'system';
    this.choice.set(next);
    localStorage.setItem(KEY, next);
    this.applyChoice(next);
  }

  private applyChoice(choice: ThemeChoice): void {
    if (choice === 'system') {
      delete document.documentElement.dataset['theme'];
    } else {
      document.documentElement.dataset['theme'] = choice;
    }
  }

  private saved(): ThemeChoice {
    const value = localStorage.getItem(KEY);
    return value === 'light' || value === 'dark' ? value : 'system';
  }
}
