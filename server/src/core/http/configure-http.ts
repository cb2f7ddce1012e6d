import * as fs from 'node:fs';
import * as path from 'node:path';

import { INestApplication, ValidationPipe } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import express from 'express';

import { AuthenticationMiddleware } from '../../auth/authentication.middleware';
import { HttpSecurityMiddleware } from '../../auth/http-security.middleware';
import { AllExceptionsFilter } from '../errors/all-exceptions.filter';
import { dashboardDirectory } from '../package-info';
import { setUpOpenApi } from './openapi';
import { jsonBodyMiddleware } from './json-body.middleware';

/** Everything HTTP-shaped that is not a controller: parsing, validation, errors, docs, static files. */
export function configureHttp(app: INestApplication): void {
  const express_ = app as NestExpressApplication;
  express_.disable('x-powered-by');
  express_.set('etag', false);
  // Order matters: Host/Origin checks, then credentials, and only then is a body read.
  app.use(app.get(HttpSecurityMiddleware).handle);
  app.use(app.get(AuthenticationMiddleware).handle);
  app.use(jsonBodyMiddleware());
  app.setGlobalPrefix('api');
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

/** The built Angular app at `/`; unknown non-API paths get index.html so deep links work. */
function serveDashboard(app: INestApplication): void {
  const root = dashboardDirectory();
  const index = path.join(root, 'index.html');
  app.use(express.static(root, { index: false, maxAge: '1h' }));
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
