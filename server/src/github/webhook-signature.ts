import { createHmac, timingSafeEqual } from 'node:crypto';

const PREFIX = 'sha256=';
const HEX_DIGEST = /^[0-9a-f]{64}$/i;

/** The `X-Hub-Signature-256` value GitHub sends for `body` signed with `secret`. */
export function signWebhookBody(secret: string, body: Buffer | string): string {
  return PREFIX + createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * Whether `header` (`X-Hub-Signature-256`) is the HMAC-SHA256 of the raw request body under
 * `secret`. The body must be the exact bytes received (not re-serialised JSON). Malformed or
 * missing headers are simply invalid; the digests are compared in constant time, and only after
 * checking both are 32 bytes, because timingSafeEqual throws on a length mismatch.
 */
export function verifyWebhookSignature(secret: string, body: Buffer | string, header: string | string[] | undefined): boolean {
  if (secret.length === 0 || typeof header !== 'string' || !header.startsWith(PREFIX)) {
    return false;
  }
  const hex = header.slice(PREFIX.length);
  if (!HEX_DIGEST.test(hex)) {
    return false;
  }
  const received = Buffer.from(hex, 'hex');
  const expected = createHmac('sha256', secret).update(body).digest();
  return received.length === expected.length && timingSafeEqual(received, expected);
}
