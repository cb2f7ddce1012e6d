import { credentialCookieName } from '../core/http/credential-cookie';

/** A paired device's cookie (see credentialCookieName). */
export function deviceCookieName(port: number, secure: boolean): string {
  return credentialCookieName('am_device', port, secure);
}
