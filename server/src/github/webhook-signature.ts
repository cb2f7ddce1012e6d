import { Hmac, createHmac, timingSafeEqual } from 'node:crypto';

const PREFIX = 'sha256=';
const HEX_DIGEST = /^[0-9a-f]{64}$/i;

/** The `X-Hub-Signature-256` value GitHub sends for `body` signed with `secret`. */
export function signWebhookBody(secret: string, body: Buffer | string): string {
  return PREFIX + createHmac('sha256', secret).update(body).digest('hex');
}

/** Checks a body against its signature as the body streams in, so it need not be held to be verified. */
export interface WebhookSignatureVerifier {
  update(chunk: Buffer | string): void;
  /** Whether everything passed to `update` is what the header signed; call once, at the end. */
  matches(): boolean;
}

/**
 * A verifier for `header` (`X-Hub-Signature-256`) under `secret`, or null when the header cannot
 * be a signature at all (missing, repeated, not `sha256=` and 64 hex digits) or no secret is set:
 * such a request is refused before any of its body is read. The digests are compared in constant
 * time, both being 32 bytes (timingSafeEqual throws on a length mismatch).
 */
export function webhookSignatureVerifier(
  secret: string,
  header: string | string[] | undefined,
): WebhookSignatureVerifier | null {
  if (secret.length === 0 || typeof header !== 'string' || !header.startsWith(PREFIX)) {
    return null;
  }
  const hex = header.slice(PREFIX.length);
  if (!HEX_DIGEST.test(hex)) {
    return null;
  }
  const received = Buffer.from(hex, 'hex');
  const hmac: Hmac = createHmac('sha256', secret);
  return {
    matches: () => {
      const expected = hmac.digest();
      return received.length === expected.length && timingSafeEqual(received, expected);
    },
    update: (chunk) => {
      hmac.update(chunk);
    },
  };
}

/**
 * Whether `header` is the HMAC-SHA256 of the raw request body under `secret`. The body must be
 * the exact bytes received (not re-serialised JSON).
 */
export function verifyWebhookSignature(
  secret: string,
  body: Buffer | string,
  header: string | string[] | undefined,
): boolean {
  const verifier = webhookSignatureVerifier(secret, header);
  if (!verifier) {
    return false;
  }
  verifier.update(body);
  return verifier.matches();
}
