import { Inject, Injectable, Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { errorBody } from '../core/errors/error-body';
import { Serving, isLoopbackHost } from '../core/http/serving';
import { loggablePath } from '../devices/pairing-page.middleware';
import { RUNTIME, Runtime } from '../core/runtime';
import { UNSAFE_METHODS, isAllowedHost, isAllowedOrigin, parseHost } from './request-policy';

/** The dashboard: its own scripts, inline styles (Angular's component styles), nothing else. */
const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');
/** JSON and streams: nothing in them may ever run or be framed. */
const API_CSP = "default-src 'none'; frame-ancestors 'none'";
/** The OpenAPI explorer (swagger-ui) needs its own scripts, styles and data: images. */
const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'";

const CORS_HEADERS = 'Authorization, Content-Type, Last-Event-ID, X-File-Name';
const CORS_METHODS = 'GET, POST, PATCH, DELETE';

/**
 * Browser-facing defences that apply before anything else: the Host allowlist (DNS rebinding),
 * response hardening headers, CORS for the one configured origin, and the Origin check on
 * state-changing requests (CSRF).
 */
@Injectable()
export class HttpSecurityMiddleware {
  private readonly logger = new Logger('HttpSecurity');

  private readonly serving: Serving;

  constructor(
    private readonly configuration: ConfigurationService,
    @Inject(RUNTIME) runtime: Runtime,
  ) {
    this.serving = runtime.serving;
  }

  readonly handle = (req: Request, res: Response, next: NextFunction): void => {
    const host = req.headers.host;
    const allowedOrigin = this.configuration.get('allowedOrigin');
    if (!isAllowedHost(host, this.configuration.get('host'), this.serving.certificateNames)) {
      this.refuse(
        req,
        res,
        'host_not_allowed',
        'this server only answers to its loopback names, its --host and its certificate names (Host header refused)',
      );
      return;
    }
    const isApi = req.path === '/api' || req.path.startsWith('/api/');
    res.setHeader(
      'Content-Security-Policy',
      req.path.startsWith('/api/docs') ? DOCS_CSP : isApi ? API_CSP : DASHBOARD_CSP,
    );
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');

    const origin = req.headers.origin;
    const corsAllowed = allowedOrigin !== null && origin === allowedOrigin;
    if (corsAllowed) {
      res.setHeader('Access-Control-Allow-Origin', allowedOrigin);
      res.setHeader('Vary', 'Origin');
      res.setHeader('Access-Control-Expose-Headers', 'Content-Disposition');
    }
    if (req.method === 'OPTIONS') {
      if (!corsAllowed) {
        this.refuse(
          req,
          res,
          'origin_not_allowed',
          'cross-origin requests are only allowed from the configured allowedOrigin',
        );
        return;
      }
      res.setHeader('Access-Control-Allow-Methods', CORS_METHODS);
      res.setHeader('Access-Control-Allow-Headers', CORS_HEADERS);
      res.setHeader('Access-Control-Max-Age', '600');
      res.status(204).end();
      return;
    }
    if (this.serving.scheme === 'https' && !isLoopbackHost(parseHost(host)?.name ?? 'localhost')) {
      // A browser that reached us over TLS by our name never downgrades to plain HTTP here again
      // (never for a loopback name: HSTS there would pin every local port of every other server).
      res.setHeader('Strict-Transport-Security', 'max-age=31536000');
    }
    if (UNSAFE_METHODS.has(req.method) && !isAllowedOrigin(origin, host, allowedOrigin, this.serving.scheme)) {
      this.refuse(req, res, 'origin_not_allowed', 'state-changing requests from another origin are refused (CSRF)');
      return;
    }
    next();
  };

  private refuse(req: Request, res: Response, code: string, message: string): void {
    this.logger.warn({ code, method: req.method, msg: 'request refused', path: loggablePath(req.path) });
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.status(403).json(errorBody(403, code, message));
  }
}
