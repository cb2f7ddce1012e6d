import { Injectable, signal } from '@angular/core';

/**
 * Whether this browser is logged in to the manager. The login is a cookie that only the link with
 * the token sets, so a bookmark or a new browser has none: the first 401 turns the whole page into
 * the logged-out one, which says how to get that link, instead of empty boards and a toast per call.
 */
@Injectable({ providedIn: 'root' })
export class LoginState {
  private readonly out = signal(false);
  private readonly revoked = signal(false);
  readonly loggedOut = this.out.asReadonly();
  /** This browser was a paired device whose pairing was revoked: it pairs again, it has no token. */
  readonly deviceRevoked = this.revoked.asReadonly();

  markLoggedOut(code: string | null = null): void {
    this.revoked.set(code === 'device_revoked');
    this.out.set(true);
  }
}
