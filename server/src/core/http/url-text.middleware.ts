import type { NextFunction, Request, RequestHandler, Response } from 'express';

import { errorBody } from '../errors/error-body';

/**
 * URLs of `/api/*` requests may not carry NUL (`%00`), as JSON bodies may not (json-shape.ts):
 * PostgreSQL text cannot hold it, so a filter such as `?pullRequestId=a%00b` or an ID such as
 * `/requirements/%00/changes` would fail its query there (a 500) while SQLite matched nothing.
 * Refused on both stores alike: in the query as invalid input (400), in the path as what it is,
 * a name no resource has (404, as for any other malformed ID).
 */
export function urlTextMiddleware(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.path.startsWith('/api/') || !/%00/i.test(req.url)) {
      next();
      return;
    }
    const query = req.url.indexOf('?');
    if (/%00/i.test(query >= 0 ? req.url.slice(0, query) : req.url)) {
      res.status(404).json(errorBody(404, 'not_found', 'no such resource'));
      return;
    }
    res.status(400).json(errorBody(400, 'invalid_text', 'query parameters may not contain NUL (%00)'));
  };
}
