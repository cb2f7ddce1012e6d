import type { Readable } from 'node:stream';

import { invalid } from '../core/errors/domain-error';
import type { WebhookSignatureVerifier } from './webhook-signature';

export interface ReadWebhookOptions {
  /** Keep the bytes (for parsing once verified) while the body is at most this long; 0 keeps nothing. */
  keepBytes: number;
  /** Longer bodies are refused. */
  maxBytes: number;
  timeoutMs: number;
}

/**
 * Streams a webhook body through its signature verifier. The bytes are kept only while the body
 * stays within `keepBytes`; past it they are dropped and only the verifier goes on, so a delivery
 * holds at most `keepBytes` however long it is. Too long, too slow or cut short: refused, with
 * the listeners removed (the lingering close discards the rest). Resolves with the kept body, or
 * null when none was kept.
 */
export function readWebhookBody(
  body: Readable,
  verifier: WebhookSignatureVerifier,
  options: ReadWebhookOptions,
): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    if (body.readableEnded) {
      reject(invalid('invalid_body', 'the webhook body was already read'));
      return;
    }
    let kept: Buffer[] | null = options.keepBytes > 0 ? [] : null;
    let size = 0;
    const settle = (error: Error | null) => {
      clearTimeout(timer);
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onAborted);
      body.off('close', onClose);
      if (error) {
        reject(error);
      } else {
        resolve(kept ? Buffer.concat(kept, size) : null);
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > options.maxBytes) {
        settle(invalid('body_too_large', `webhook bodies may be at most ${options.maxBytes} bytes`));
        return;
      }
      verifier.update(chunk);
      if (kept && size > options.keepBytes) {
        kept = null;
      }
      kept?.push(chunk);
    };
    const onEnd = () => settle(null);
    const onAborted = () => settle(invalid('request_aborted', 'the webhook body was not fully received'));
    const onClose = () => {
      if (!body.readableEnded) {
        onAborted();
      }
    };
    const timer = setTimeout(
      () => settle(invalid('webhook_timeout', `the webhook body did not arrive within ${options.timeoutMs / 1000} s`)),
      options.timeoutMs,
    );
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onAborted);
    body.once('close', onClose);
    body.resume();
  });
}

/** A verified webhook body as the JSON object it must be; 400 otherwise (`header` names the event header the forge sends). */
export function webhookJson(body: Buffer, header: string): object {
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    throw invalid('invalid_json', 'the webhook body is not JSON');
  }
  if (typeof payload !== 'object' || payload === null) {
    throw invalid('invalid_webhook', `a webhook needs an ${header} header and a JSON object body`);
  }
  return payload;
}
