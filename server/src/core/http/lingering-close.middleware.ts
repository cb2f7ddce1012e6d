import type { IncomingMessage } from 'node:http';

import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** How much of an unread request body is read and discarded after its answer, and for how long. */
export const LINGER_LIMITS = {
  /** The largest body any route accepts: GitHub's 25 MB webhook payloads. */
  bytes: 25 * 1024 * 1024,
  timeoutMs: 10_000,
} as const;

function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Reads and discards what is left of `req`; true when it ended within the limits. */
function drain(req: IncomingMessage, limits: { bytes: number; timeoutMs: number }): Promise<boolean> {
  return new Promise((resolve) => {
    if (req.complete || req.readableEnded || req.destroyed) {
      resolve(req.complete);
      return;
    }
    let seen = 0;
    const finish = (ended: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      resolve(ended);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > limits.bytes) {
        finish(false);
      }
    };
    const onEnd = () => finish(true);
    const onClose = () => finish(req.complete);
    const timer = setTimeout(() => finish(false), limits.timeoutMs);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
    req.resume();
  });
}

/**
 * A lingering close. When an answer ends while its request body is still arriving (every
 * refusal made before the body is read: 401, 403, 404, a declared size over a limit), closing
 * at once makes the kernel reset a connection that still has unread bytes, and a client busy
 * writing its body then fails with EPIPE/ECONNRESET before it reads the answer. So the answer
 * is written at once (it carries its Content-Length, so it is complete for the client), and
 * the connection is ended only after the rest of the body has been read and discarded, up to
 * LINGER_LIMITS; past them it is closed anyway. Nothing is kept: the bytes are dropped as they
 * come. Express's own `res.end` is wrapped, as compression middleware does, so that every path
 * that answers (middleware, the exception filter, the not-found handler) gets the same close.
 */
export function lingeringCloseMiddleware(limits: { bytes: number; timeoutMs: number } = LINGER_LIMITS): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!hasBody(req)) {
      next();
      return;
    }
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    let lingering = false;
    res.end = ((...args: unknown[]) => {
      if (lingering || req.complete || req.destroyed) {
        return end(...args);
      }
      lingering = true;
      const callback = typeof args[args.length - 1] === 'function' ? (args.pop() as () => void) : undefined;
      if (!res.headersSent) {
        // The body is not read to its end in every case (past the limits), so the connection is not reused.
        res.setHeader('Connection', 'close');
      }
      if (args[0] !== undefined && args[0] !== null) {
        res.write(args[0], (args[1] as BufferEncoding | undefined) ?? 'utf8');
      }
      void drain(req, limits).then((ended) => {
        if (!ended) {
          // What is still in flight would be reset by the kernel anyway; do not wait for it.
          res.once('finish', () => req.socket.destroy());
        }
        end(callback);
      });
      return res;
    }) as Response['end'];
    next();
  };
}
