import type { NextFunction, Request, RequestHandler, Response } from 'express';
import express from 'express';

import { LIMITS } from '@libs/contracts';

import { errorBody } from '../errors/error-body';

/** Raw-body routes that must reach their handler unparsed whatever their Content-Type. */
const RAW_BODY_ROUTES = [/^\/api\/requirements\/[^/]+\/attachments\/?$/, /^\/api\/github\/webhook\/?$/];

const BODY_ERRORS: Record<string, { code: string; message: string }> = {
  'charset.unsupported': { code: 'unsupported_charset', message: 'request body charset must be utf-8' },
  'encoding.unsupported': { code: 'unsupported_encoding', message: 'request body encoding is not supported' },
  'entity.parse.failed': { code: 'invalid_json', message: 'request body is not valid JSON' },
  'entity.too.large': { code: 'body_too_large', message: `JSON request bodies may be at most ${LIMITS.jsonBodyBytes} bytes` },
  'entity.verify.failed': { code: 'invalid_body', message: 'request body was rejected' },
  'request.aborted': { code: 'request_aborted', message: 'request body was not fully received' },
  'request.size.invalid': { code: 'invalid_body', message: 'request body size does not match Content-Length' },
};

/**
 * No request body nests this deep (the DTOs are two levels at most). Deeper bodies are refused
 * before validation, whose recursive walks (class-transformer, the ValidationPipe) would
 * otherwise overflow the stack on a few thousand levels and answer 500.
 */
export const MAX_JSON_DEPTH = 32;

/** Nesting depth of a parsed JSON value, without recursion; stops counting past `limit`. */
export function jsonDepthExceeds(value: unknown, limit: number): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ depth: 0, value }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop() as { value: unknown; depth: number };
    if (current === null || typeof current !== 'object') {
      continue;
    }
    if (depth + 1 > limit) {
      return true;
    }
    for (const child of Object.values(current as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') {
        stack.push({ depth: depth + 1, value: child });
      }
    }
  }
  return false;
}

/**
 * JSON bodies up to 1 MB and MAX_JSON_DEPTH levels deep. Parser errors happen before Nest's
 * pipeline, so they are answered here in the same JSON error shape (always 400: the contract
 * counts body problems as invalid input, including sizes, which body-parser would call 413).
 */
export function jsonBodyMiddleware(): RequestHandler {
  const parse = express.json({ limit: LIMITS.jsonBodyBytes, strict: true, type: ['application/json', 'application/*+json'] });
  return (req: Request, res: Response, next: NextFunction) => {
    if (RAW_BODY_ROUTES.some((route) => route.test(req.path))) {
      next();
      return;
    }
    parse(req, res, (err?: unknown) => {
      if (!err) {
        if (jsonDepthExceeds(req.body, MAX_JSON_DEPTH)) {
          res.status(400).json(errorBody(400, 'body_too_deep', `request bodies may nest at most ${MAX_JSON_DEPTH} levels`));
          return;
        }
        next();
        return;
      }
      const type = (err as { type?: string }).type ?? '';
      const known = BODY_ERRORS[type] ?? { code: 'invalid_body', message: 'request body could not be read' };
      res.status(400).json(errorBody(400, known.code, known.message));
    });
  };
}
