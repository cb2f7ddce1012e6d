import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';

import { writeAtomically } from '../core/configuration/atomic-file';
import { credentialCookieName } from '../core/http/credential-cookie';

const TOKEN_PATTERN = /^[0-9a-f]{64}$/;

/**
 * The workspace's local access token: 256 random bits as hex, in a file only the user can read.
 * Created at first start; a file with loose permissions is tightened, a malformed one replaced.
 */
export function loadOrCreateToken(tokenPath: string): string {
  try {
    const token = fs.readFileSync(tokenPath, 'utf8').trim();
    if (TOKEN_PATTERN.test(token)) {
      if ((fs.statSync(tokenPath).mode & 0o077) !== 0) {
        fs.chmodSync(tokenPath, 0o600);
      }
      return token;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw err;
    }
  }
  const token = randomBytes(32).toString('hex');
  writeAtomically(tokenPath, `${token}\n`, 0o600);
  return token;
}

/** Reads the token without creating one (for `agent-manager token` before any start). */
export function readToken(tokenPath: string): string | null {
  try {
    const token = fs.readFileSync(tokenPath, 'utf8').trim();
    return TOKEN_PATTERN.test(token) ? token : null;
  } catch {
    return null;
  }
}

/**
 * Compares a presented secret with the expected one in constant time. Both sides are hashed
 * first so neither the length nor any prefix of the secret leaks through timing.
 */
export function secretsEqual(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The login cookie's value: derived from the token, so the cookie never holds the token itself. */
export function sessionCookieValue(token: string): string {
  return createHmac('sha256', token).update('agent-manager dashboard session v1').digest('hex');
}

/** The owner's login cookie (see credentialCookieName). */
export function sessionCookieName(port: number, secure: boolean): string {
  return credentialCookieName('am_session', port, secure);
}

export function loginUrl(origin: string, token: string): string {
  return `${origin}/?token=${token}`;
}
