import { Injectable, signal } from '@angular/core';

export type ThemeChoice = 'system' | 'light' | 'dark';
const KEY = 'am.theme';

/**
 * Follows the system by default; an explicit choice sets `data-theme` on <html>, which the CSS
 * variables in styles.css key on.
 */
@Injectable({ providedIn: 'root' })
export class Theme {
  readonly choice = signal<ThemeChoice>(this.saved());

  constructor() {
    this.applyChoice(this.choice());
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
