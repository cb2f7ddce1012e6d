import type { IncomingMessage } from 'node:http';

import type { NextFunction, Request, RequestHandler, Response } from 'express';
import express from 'express';

import { LIMITS } from '@libs/contracts';

import { errorBody } from '../errors/error-body';
import { checkJsonShape } from './json-shape';

/** Raw-body routes that must reach their handler unparsed whatever their Content-Type (exact spellings: routing is case-sensitive and strict). */
const RAW_BODY_ROUTES = [
  /^\/api\/requirements\/[^/]+\/attachments$/,
  /^\/api\/github\/webhook$/,
  /^\/api\/gitlab\/webhook$/,
];

const BODY_ERRORS: Record<string, { code: string; message: string }> = {
  'charset.unsupported': { code: 'unsupported_charset', message: 'request body charset must be utf-8' },
  'encoding.unsupported': { code: 'unsupported_encoding', message: 'request body encoding is not supported' },
  'entity.parse.failed': { code: 'invalid_json', message: 'request body is not valid JSON' },
  'entity.too.large': {
    code: 'body_too_large',
    message: `JSON request bodies may be at most ${LIMITS.jsonBodyBytes} bytes`,
  },
  'entity.verify.failed': { code: 'invalid_body', message: 'request body was rejected' },
  'request.aborted': { code: 'request_aborted', message: 'request body was not fully received' },
  'request.size.invalid': { code: 'invalid_body', message: 'request body size does not match Content-Length' },
};

/** A refusal found by `verify`, carried through body-parser to the error mapping below. */
class BodyShapeError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly type = 'body.shape',
  ) {
    super(message);
  }
}

/**
 * Runs on the raw bytes, after they are read and before they are decoded and parsed: only
 * UTF-8 (RFC 8259; the shape check reads bytes), and within the shape limits, so neither
 * JSON.parse nor the validation that follows ever sees a body that costs more than a request needs.
 */
function verifyShape(_req: IncomingMessage, _res: unknown, body: Buffer, encoding: string): void {
  if (encoding.toLowerCase() !== 'utf-8' && encoding.toLowerCase() !== 'utf8') {
    throw new BodyShapeError('unsupported_charset', BODY_ERRORS['charset.unsupported'].message, 'charset.unsupported');
  }
  const problem = checkJsonShape(body);
  if (problem) {
    throw new BodyShapeError(problem.code, problem.message);
  }
}

/**
 * JSON bodies of `/api/*` requests: UTF-8, up to 1 MB, within the shape limits (json-shape.ts:
 * depth, keys, array items, no lone surrogates or NUL). Parser errors happen before Nest's pipeline,
 * so they are answered here in the same JSON error shape (always 400: the contract counts body
 * problems as invalid input, including sizes, which body-parser would call 413). Other paths
 * take no body, so theirs is never parsed (the lingering close discards it).
 */
export function jsonBodyMiddleware(): RequestHandler {
  const parse = express.json({
    limit: LIMITS.jsonBodyBytes,
    strict: true,
    type: ['application/json', 'application/*+json'],
    verify: verifyShape,
  });
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.path.startsWith('/api/') || RAW_BODY_ROUTES.some((route) => route.test(req.path))) {
      next();
      return;
    }
    const declared = req.headers['content-length'];
    if (
      declared !== undefined &&
      Number(declared) > LIMITS.jsonBodyBytes &&
      req.is(['application/json', 'application/*+json'])
    ) {
      // Known too large from the header: answer now instead of after body-parser has read it all.
      res.status(400).json(errorBody(400, 'body_too_large', BODY_ERRORS['entity.too.large'].message));
      return;
    }
    parse(req, res, (err?: unknown) => {
      if (!err) {
        next();
        return;
      }
      if (err instanceof BodyShapeError) {
        // http-errors passes the thrown error itself through (with a status added).
        res.status(400).json(errorBody(400, err.code, err.message));
        return;
      }
      const type = (err as { type?: string }).type ?? '';
      const known = BODY_ERRORS[type] ?? { code: 'invalid_body', message: 'request body could not be read' };
      res.status(400).json(errorBody(400, known.code, known.message));
    });
  };
}
