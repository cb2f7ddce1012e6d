import type { CookieOptions } from 'express';

/**
 * The name of a credential cookie. Cookies are shared by every port of a host, so the name
 * carries the port (instances don't collide); over TLS it is `__Host-`-prefixed, which a browser
 * accepts only when Secure, for `/` and without Domain, so no other server on this host (another
 * port, plain HTTP) can plant or shadow it.
 */
export function credentialCookieName(base: string, port: number, secure: boolean): string {
  return `${secure ? '__Host-' : ''}${base}_${port}`;
}

/** A credential's cookie: never readable by scripts, never sent by another site's request. */
export function credentialCookieOptions(secure: boolean, maxAgeMs?: number): CookieOptions {
  return {
    httpOnly: true,
    path: '/',
    sameSite: 'strict',
    secure,
    ...(maxAgeMs === undefined ? {} : { maxAge: maxAgeMs }),
  };
}

const MAX_COOKIE_HEADER = 8192;

/** One cookie's value from a Cookie header; none from a header longer than any real one. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header || header.length > MAX_COOKIE_HEADER) {
    return undefined;
  }
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) {
      return part.slice(at + 1).trim();
    }
  }
  return undefined;
}
