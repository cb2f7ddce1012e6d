import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';

import { INestApplication, ValidationPipe } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import express from 'express';

import { AuthenticationMiddleware } from './auth/authentication.middleware';
import { HttpSecurityMiddleware } from './auth/http-security.middleware';
import { PairingPageMiddleware } from './devices/pairing-page.middleware';
import { AllExceptionsFilter } from './core/errors/all-exceptions.filter';
import { dashboardDirectory } from './core/package-info';
import { jsonBodyMiddleware } from './core/http/json-body.middleware';
import { urlTextMiddleware } from './core/http/url-text.middleware';
import { lingeringCloseMiddleware } from './core/http/lingering-close.middleware';
import { setUpOpenApi } from './core/http/openapi';
import { cacheValidationMetadata } from './core/http/validation-metadata-cache';

/**
 * The Express instance Nest runs on. Routing is case-sensitive and strict (a trailing slash is
 * another path), so each route has exactly one spelling: the credential checks, the raw-body
 * routes and the handlers all see the same path, and `/api/requirements/x/Attachments` is a
 * 404 rather than an upload whose body the JSON parser has already consumed. The settings are
 * read when Express creates its router, so they are set before Nest registers anything.
 */
export function createExpressInstance(): express.Express {
  const instance = express();
  instance.set('case sensitive routing', true);
  instance.set('strict routing', true);
  return instance;
}

/** Everything HTTP-shaped that is not a controller: parsing, validation, errors, docs, static files. */
export function configureHttp(app: INestApplication): void {
  const express_ = app as NestExpressApplication;
  express_.disable('x-powered-by');
  express_.set('etag', false);
  // Order matters: answers that leave a body unread still read it off (below), then Host/Origin
  // checks, then credentials, and only then is a body read.
  app.use(lingeringCloseMiddleware());
  app.use(app.get(HttpSecurityMiddleware).handle);
  app.use(app.get(PairingPageMiddleware).handle);
  app.use(app.get(AuthenticationMiddleware).handle);
  app.use(urlTextMiddleware());
  app.use(jsonBodyMiddleware());
  app.setGlobalPrefix('api');
  cacheValidationMetadata();
  app.useGlobalPipes(
    new ValidationPipe({
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
      stopAtFirstError: false,
      transform: true,
      whitelist: true,
    }),
  );
  app.useGlobalFilters(new AllExceptionsFilter());
  setUpOpenApi(app);
  serveDashboard(app);
}

/** Build outputs named by content hash (`main-WLAN5XIL.js`): they never change, so cache them for good. */
const HASHED_ASSET = /-[A-Z0-9]{8}\.(js|css)$/;
const COMPRESSIBLE = /\.(js|css|svg|json|txt|map)$/;

/**
 * The built Angular app at `/`; unknown non-API paths get index.html so deep links work.
 * Text assets go out gzipped (compressed once and kept: the build is fixed for the life of the
 * process), hashed ones with a year's immutable cache. The scripts are compressed at start, on
 * libuv's threads: compressing the 300 KB framework chunk at level 9 on its first request held
 * the event loop, and with it every other first read of a cold page, for tens of milliseconds.
 */
function serveDashboard(app: INestApplication): void {
  const root = dashboardDirectory();
  const index = path.join(root, 'index.html');
  const gzipped = new Map<string, Promise<Buffer | null>>();
  const compress = (file: string): Promise<Buffer | null> => {
    let body = gzipped.get(file);
    if (!body) {
      body = fs.promises
        .readFile(file)
        .then(
          (raw) =>
            new Promise<Buffer>((resolve, reject) =>
              zlib.gzip(raw, { level: 9 }, (err, out) => (err ? reject(err) : resolve(out))),
            ),
        )
        .catch(() => null);
      gzipped.set(file, body);
    }
    return body;
  };
  if (fs.existsSync(root)) {
    for (const name of fs.readdirSync(root)) {
      if (/\.(js|css)$/.test(name)) {
        void compress(path.join(root, name));
      }
    }
  }
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (
      (req.method !== 'GET' && req.method !== 'HEAD') ||
      req.path.startsWith('/api/') ||
      !COMPRESSIBLE.test(req.path) ||
      !/\bgzip\b/.test(req.headers['accept-encoding'] ?? '')
    ) {
      next();
      return;
    }
    const file = path.join(root, path.normalize(req.path).replace(/^([/\\])+/, ''));
    if (!file.startsWith(root + path.sep)) {
      next();
      return;
    }
    if (!gzipped.has(file) && !(fs.existsSync(file) && fs.statSync(file).isFile())) {
      next();
      return;
    }
    void compress(file).then((body) => {
      if (!body) {
        next();
        return;
      }
      res.setHeader('Content-Encoding', 'gzip');
      res.setHeader('Vary', 'Accept-Encoding');
      res.setHeader(
        'Cache-Control',
        HASHED_ASSET.test(file) ? 'public, max-age=31536000, immutable' : 'public, max-age=3600',
      );
      res.type(path.extname(file));
      res.setHeader('Content-Length', body.length);
      res.end(req.method === 'HEAD' ? undefined : body);
    });
  });
  const assets = express.static(root, {
    index: false,
    maxAge: '1h',
    setHeaders: (res, file) => {
      if (HASHED_ASSET.test(file)) {
        res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
      }
    },
  });
  // An API request never names a dashboard file: it skips the static lookup (a stat() per GET).
  app.use((req: Request, res: Response, next: NextFunction) =>
    req.path.startsWith('/api/') ? next() : assets(req, res, next),
  );
  app.use((req: Request, res: Response, next: NextFunction) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || req.path === '/api' || req.path.startsWith('/api/')) {
      next();
      return;
    }
    if (!fs.existsSync(index)) {
      res.status(503).type('text/plain').send('The dashboard is not built. Run: npm run build\n');
      return;
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(index);
  });
}
