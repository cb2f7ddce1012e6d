import type { Readable } from 'node:stream';

import { invalid } from '../core/errors/domain-error';
import type { WebhookSignatureVerifier } from './webhook-signature';

export interface ReadWebhookOptions {
  /** Keep the bytes (for parsing once verified); false: only feed the verifier. */
  keep: boolean;
  maxBytes: number;
  /** The Content-Length, when declared: the buffer is allocated once at that size. */
  declaredLength: number | null;
  timeoutMs: number;
}

/**
 * Streams a webhook body through its signature verifier. Nothing is kept unless asked, and then
 * in one buffer of the declared size (or chunks, for a chunked body) that is dropped as soon as
 * the request is done. Too large, too slow or cut short: refused, with the listeners removed so
 * that nothing more is held (the lingering close discards the rest).
 */
export function readWebhookBody(body: Readable, verifier: WebhookSignatureVerifier, options: ReadWebhookOptions): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    if (body.readableEnded) {
      reject(invalid('invalid_body', 'the webhook body was already read'));
      return;
    }
    const whole = options.keep && options.declaredLength !== null ? Buffer.allocUnsafe(options.declaredLength) : null;
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (error: Error | null) => {
      clearTimeout(timer);
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onAborted);
      body.off('close', onClose);
      if (error) {
        reject(error);
      } else if (!options.keep) {
        resolve(null);
      } else {
        resolve(whole ? whole.subarray(0, size) : Buffer.concat(chunks, size));
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > options.maxBytes || (whole !== null && size > whole.length)) {
        settle(invalid('body_too_large', `webhook bodies may be at most ${options.maxBytes} bytes`));
        return;
      }
      verifier.update(chunk);
      if (whole) {
        chunk.copy(whole, size - chunk.length);
      } else if (options.keep) {
        chunks.push(chunk);
      }
    };
    const onEnd = () => settle(null);
    const onAborted = () => settle(invalid('request_aborted', 'the webhook body was not fully received'));
    const onClose = () => {
      if (!body.readableEnded) {
        onAborted();
      }
    };
    const timer = setTimeout(() => settle(invalid('webhook_timeout', `the webhook body did not arrive within ${options.timeoutMs / 1000} s`)), options.timeoutMs);
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onAborted);
    body.once('close', onClose);
    body.resume();
  });
}
