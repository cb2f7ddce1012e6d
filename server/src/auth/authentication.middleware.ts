import { Inject, Injectable, Logger } from '@nestjs/common';
import type { NextFunction, Response } from 'express';

import type { EventActor } from '@libs/contracts';

import type { ActorRequest } from '../core/http/actor.decorator';
import { errorBody } from '../core/errors/error-body';
import { credentialCookieOptions, readCookie } from '../core/http/credential-cookie';
import { deviceCookieName } from '../devices/device-cookie';
import { DevicesService } from '../devices/devices.service';
import { sessionCookieName } from './local-token';
import { LocalTokenService } from './local-token.service';
import { AgentScope, RunCredentialsService } from './run-credentials.service';
import { PUBLIC_ROUTES } from '../core/http/public-routes';
import { personActor } from '../core/person';
import { RUNTIME, Runtime } from '../core/runtime';

/** Where run-scoped credentials are accepted; the timers route must name the run's Requirement. */
const AGENT_PREFIX = '/api/agent/';
const TIMER_ROUTE = /^\/api\/requirements\/([^/]+)\/timers(?:\/[^/]+)?$/;
const BEARER = /^Bearer ([A-Za-z0-9_]{1,200})$/;

/** What a paired device may not do, whatever it asks: what would give it more than a revocable seat. */
function deviceRefused(method: string, path: string): boolean {
  return (
    path.startsWith(AGENT_PREFIX) ||
    path === AGENT_PREFIX.slice(0, -1) ||
    (path.startsWith('/api/configuration') && method !== 'GET' && method !== 'HEAD') ||
    path.startsWith('/api/devices/pairings')
  );
}

export interface AuthenticatedRequest extends ActorRequest {
  agentScope?: AgentScope;
}

function decodePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/**
 * Who is calling `/api/*`: a person (the local token as Bearer, or the dashboard's login
 * cookie) or an agent run (its run-scoped Bearer token, only on the agent API and its own
 * Requirement's timers). Refusals write nothing: this runs before any body is read.
 * Also serves login links (`?token=…` on any dashboard path), which trade the token for the cookie.
 */
@Injectable()
export class AuthenticationMiddleware {
  private readonly logger = new Logger('Authentication');
  /** The person the owner's credentials stand for: named on every event their requests cause. */
  private readonly owner: EventActor;
  /** Served over TLS: cookies are marked Secure, so no plain-HTTP request ever carries them. */
  private readonly secure: boolean;

  constructor(
    private readonly runCredentials: RunCredentialsService,
    private readonly tokens: LocalTokenService,
    private readonly devices: DevicesService,
    @Inject(RUNTIME) runtime: Runtime,
  ) {
    this.owner = personActor(runtime.person);
    this.secure = runtime.serving.scheme === 'https';
  }

  readonly handle = (req: AuthenticatedRequest, res: Response, next: NextFunction): void => {
    if (/^\/api(\/|$)/i.test(req.path) && !/^\/api(\/|$)/.test(req.path)) {
      // Routing is case-sensitive, so no route answers this; without this refusal a GET would
      // get the dashboard's index.html and any other method a 404 in the API's own shape anyway.
      this.refuse(req, res, 404, 'not_found', 'API paths are lower-case: /api/…');
      return;
    }
    const isApi = req.path === '/api' || req.path.startsWith('/api/');
    if (!isApi) {
      if ((req.method === 'GET' || req.method === 'HEAD') && 'token' in req.query) {
        this.login(req, res);
        return;
      }
      next();
      return;
    }
    if (PUBLIC_ROUTES.has(`${req.method} ${req.path}`)) {
      next();
      return;
    }
    if ('token' in req.query || 'access_token' in req.query) {
      // URLs end up in logs, history and Referer headers: never accept a credential there.
      this.refuse(
        req,
        res,
        401,
        'token_in_query',
        'credentials are not accepted in the query string; send Authorization: Bearer',
      );
      return;
    }
    const authorization = req.headers.authorization;
    if (authorization !== undefined) {
      const match = BEARER.exec(authorization);
      if (!match?.[1]) {
        this.refuse(req, res, 401, 'malformed_authorization', 'Authorization must be "Bearer <token>"');
        return;
      }
      this.withBearer(match[1], req, res, next);
      return;
    }
    if (!this.tokens.enabled) {
      req.actor = this.owner;
      next();
      return;
    }
    const port = req.socket.localPort ?? 0;
    const presented = readCookie(req.headers.cookie, sessionCookieName(port, this.secure));
    if (presented !== undefined && this.tokens.matchesCookie(presented)) {
      this.asHuman(req, res, next);
      return;
    }
    const device = readCookie(req.headers.cookie, deviceCookieName(port, this.secure));
    if (device !== undefined) {
      void this.asDevice(device, req, res, next);
      return;
    }
    this.refuse(
      req,
      res,
      401,
      'unauthorized',
      'missing or invalid credentials: send Authorization: Bearer <token> (see `agent-manager token`)',
    );
  };

  private withBearer(presented: string, req: AuthenticatedRequest, res: Response, next: NextFunction): void {
    if (this.runCredentials.isRunToken(presented)) {
      const scope = this.runCredentials.resolve(presented);
      if (!scope) {
        this.refuse(req, res, 401, 'run_credential_invalid', 'this run credential is unknown, revoked or expired');
        return;
      }
      const path = decodePath(req.path);
      const timer = TIMER_ROUTE.exec(path);
      const allowed = path.startsWith(AGENT_PREFIX) || (timer !== null && timer[1] === scope.requirementId);
      if (!allowed) {
        this.refuse(
          req,
          res,
          403,
          'outside_run_scope',
          "a run credential may only call the agent API and its own Requirement's timers",
        );
        return;
      }
      req.actor = { id: scope.runId, kind: 'agent' };
      req.agentScope = scope;
      next();
      return;
    }
    if (!this.tokens.enabled || this.tokens.matchesToken(presented)) {
      this.asHuman(req, res, next);
      return;
    }
    this.refuse(req, res, 401, 'unauthorized', 'invalid token (see `agent-manager token`)');
  }

  /** The owner: everywhere, the agent API included (acting for the Requirement a request names). */
  private asHuman(req: AuthenticatedRequest, _res: Response, next: NextFunction): void {
    req.actor = this.owner;
    next();
  }

  /**
   * A paired device (a phone): acts for the person, but never on the agent API, the settings or
   * another pairing (a lost phone must not outlive its revocation). Looked up on every request,
   * so a revoked device is refused at once; its open streams are cut by the revocation itself.
   */
  private async asDevice(
    credential: string,
    req: AuthenticatedRequest,
    res: Response,
    next: NextFunction,
  ): Promise<void> {
    let device;
    try {
      device = await this.devices.authenticate(credential);
    } catch (err) {
      this.logger.error({ err: (err as Error).message, msg: 'device lookup failed' });
      this.refuse(req, res, 503, 'unavailable', 'the paired devices cannot be read right now; try again');
      return;
    }
    if (!device) {
      this.refuse(req, res, 401, 'device_revoked', "this device's pairing was revoked or is unknown: pair it again");
      return;
    }
    if (deviceRefused(req.method, decodePath(req.path))) {
      this.refuse(
        req,
        res,
        403,
        'device_not_allowed',
        "a paired device may not call the agent API, change the settings or pair another device: use this machine's dashboard",
      );
      return;
    }
    if (!this.devices.track(device.id, res)) {
      return; // revoked while it was looked up: its socket is already cut
    }
    req.actor = this.owner;
    req.device = { id: device.id };
    next();
  }

  /**
   * A login link: `/?token=…`, or any dashboard deep link carrying the token (`/requirements/req_…?token=…`,
   * also with the parameter repeated). Sets the HttpOnly, SameSite=Strict cookie and redirects to
   * the same path without any `token`, so it leaves the address bar and history at once.
   */
  private login(req: AuthenticatedRequest, res: Response): void {
    const at = req.originalUrl.indexOf('?');
    const query = new URLSearchParams(at >= 0 ? req.originalUrl.slice(at + 1) : '');
    const presented = query.getAll('token');
    // Every value is compared (in constant time), so a repeated parameter cannot hide the token.
    if (!presented.some((value) => this.tokens.matchesToken(value))) {
      this.logger.warn({ msg: 'login refused', reason: 'invalid token' });
      res.setHeader('Cache-Control', 'no-store');
      res
        .status(401)
        .type('text/plain')
        .send('This login link is not valid. Run `agent-manager token` for the current one.\n');
      return;
    }
    query.delete('token');
    res.cookie(
      sessionCookieName(req.socket.localPort ?? 0, this.secure),
      this.tokens.sessionCookie,
      credentialCookieOptions(this.secure),
    );
    res.setHeader('Cache-Control', 'no-store');
    this.logger.log({ msg: 'dashboard login' });
    // `//evil.example` as a path would be a protocol-relative redirect off the site: one leading slash only.
    const rest = query.toString();
    res.redirect(303, req.path.replace(/^[/\\]+/, '/') + (rest ? `?${rest}` : ''));
  }

  private refuse(req: AuthenticatedRequest, res: Response, status: number, code: string, message: string): void {
    this.logger.warn({ code, method: req.method, msg: 'request refused', path: req.path });
    if (status === 401) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="agent-manager"');
    }
    res.status(status).json(errorBody(status, code, message));
  }
}
