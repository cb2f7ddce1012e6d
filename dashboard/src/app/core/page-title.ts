import { Injectable, effect, inject, signal } from '@angular/core';
import { Title } from '@angular/platform-browser';
import { type RouterStateSnapshot, TitleStrategy } from '@angular/router';

/**
 * The tab's title: the page's own (a route's, or a Requirement's name) prefixed with how many
 * Requirements wait for a person, so a background tab shows it.
 */
@Injectable({ providedIn: 'root' })
export class PageTitle extends TitleStrategy {
  private readonly title = inject(Title);
  private readonly base = signal('Agent Manager');
  readonly waiting = signal(0);

  constructor() {
    super();
    effect(() => {
      const n = this.waiting();
      this.title.setTitle(n > 0 ? `(${n}) ${this.base()}` : this.base());
    });
  }

  /** Routes with a title set it here (the TitleStrategy hook). */
  override updateTitle(snapshot: RouterStateSnapshot): void {
    const title = this.buildTitle(snapshot);
    if (title !== undefined) {
      this.base.set(title);
    }
  }

  /** A page that knows a better title than its route's (a Requirement's name). */
  set(title: string): void {
    this.base.set(title);
  }
}
