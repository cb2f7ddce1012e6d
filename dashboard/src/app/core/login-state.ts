import { Injectable, signal } from '@angular/core';

/**
 * Whether this browser is logged in to the manager. The login is a cookie that only the link with
 * the token sets, so a bookmark or a new browser has none: the first 401 turns the whole page into
 * the logged-out one, which says how to get that link, instead of empty boards and a toast per call.
 */
@Injectable({ providedIn: 'root' })
export class LoginState {
  private readonly out = signal(false);
  readonly loggedOut = this.out.asReadonly();

  markLoggedOut(): void {
    this.out.set(true);
  }
}
