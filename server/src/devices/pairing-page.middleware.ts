import { Inject, Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';

import { RUNTIME, Runtime } from '../core/runtime';
import { DEVICE_NAME_MAX, DevicesService } from './devices.service';

const PAIR_PATH = /^\/pair\/([^/]{1,100})$/;
const MAX_FORM = 4096;
/** A device's cookie outlives browser restarts (400 days: what browsers keep at most); revoking ends it sooner. */
const DEVICE_COOKIE_MS = 400 * 24 * 3600_000;

/** Cookies are shared by every port of a host: named after the port, like the owner's login cookie. */
export function deviceCookieName(port: number): string {
  return `am_device_${port}`;
}

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '"': '&quot;', '&': '&amp;', "'": '&#39;', '<': '&lt;', '>': '&gt;' })[c] ?? c);

/**
 * `/pair/<secret>`: the page a pairing link opens. Opening it changes nothing (a chat app that
 * previews the link must not spend it); the page's button posts it back, which pairs this browser
 * and sets its device cookie. A used or expired link answers 410, one never issued 404.
 */
@Injectable()
export class PairingPageMiddleware {
  constructor(
    private readonly devices: DevicesService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

  readonly handle = (req: Request, res: Response, next: NextFunction): void => {
    const match = PAIR_PATH.exec(req.path);
    if (!match?.[1]) {
      next();
      return;
    }
    const secret = match[1];
    if (req.method === 'GET' || req.method === 'HEAD') {
      void this.devices.linkState(secret).then(
        (found) =>
          found.state === 'open' ? this.page(res, 200, confirmBody(found.link.name)) : this.refusal(res, found.state),
        (err: Error) => next(err),
      );
      return;
    }
    if (req.method === 'POST') {
      void readForm(req).then(
        async (form) => {
          if (form === null) {
            this.page(res, 413, '<h1>Too much</h1><p>The form was larger than a device name.</p>');
            return;
          }
          const paired = await this.devices.redeem(secret, form.get('name') ?? undefined, req.headers['user-agent']);
          if (!('credential' in paired)) {
            this.refusal(res, paired.state);
            return;
          }
          res.cookie(deviceCookieName(req.socket.localPort ?? 0), paired.credential, {
            httpOnly: true,
            maxAge: DEVICE_COOKIE_MS,
            path: '/',
            sameSite: 'strict',
            secure: this.runtime.serving?.scheme === 'https',
          });
          res.setHeader('Cache-Control', 'no-store');
          res.redirect(303, '/attention');
        },
        (err: Error) => next(err),
      );
      return;
    }
    res.setHeader('Allow', 'GET, HEAD, POST');
    this.page(res, 405, '<h1>Not here</h1>');
  };

  private refusal(res: Response, state: 'used' | 'expired' | 'unknown'): void {
    const why =
      state === 'used'
        ? 'This pairing link was already used. A link pairs one browser, once.'
        : state === 'expired'
          ? 'This pairing link has expired: a link is valid for ten minutes.'
          : 'This is not a pairing link of this Agent Manager.';
    this.page(
      res,
      state === 'unknown' ? 404 : 410,
      `<h1>Cannot pair</h1><p>${why}</p><p>Make a new one: <code>agent-manager pair</code>, or Settings → Devices on the dashboard.</p>`,
    );
  }

  private page(res: Response, status: number, body: string): void {
    res.setHeader('Cache-Control', 'no-store');
    // With no-referrer a browser posts the form with `Origin: null`, which the CSRF check refuses;
    // same-origin sends our own origin to ourselves only (the link's secret never leaves the site).
    res.setHeader('Referrer-Policy', 'same-origin');
    res
      .status(status)
      .type('html')
      .send(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Pair this device · Agent Manager</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`,
      );
  }
}

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:24px;color:#1f2328;background:#f6f8fa}main{max-width:28rem;margin:0 auto}label{display:block;margin:16px 0 4px}input{font:inherit;width:100%;box-sizing:border-box;padding:10px;border:1px solid #8c959f;border-radius:6px}button{font:inherit;margin-top:16px;width:100%;padding:12px;border:0;border-radius:6px;background:#1f6feb;color:#fff}@media (prefers-color-scheme:dark){body{color:#e6edf3;background:#0d1117}input{background:#161b22;color:inherit}}';

function confirmBody(name: string): string {
  return `<h1>Pair this device</h1><p>This browser gets a credential of its own for Agent Manager: it can follow and answer your agents, not change the settings. Revoke it any time in Settings → Devices.</p><form method="post"><label for="name">Name of this device</label><input id="name" name="name" maxlength="${DEVICE_NAME_MAX}" value="${escapeHtml(name)}" autocomplete="off"><button type="submit">Pair</button></form>`;
}

/** The form's fields (an url-encoded body of a few bytes), or null when it is larger than any real one. */
function readForm(req: Request): Promise<URLSearchParams | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_FORM) {
        over = true;
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () =>
      resolve(
        over
          ? null
          : new URLSearchParams(
              req.is('application/x-www-form-urlencoded') ? Buffer.concat(chunks).toString('utf8') : '',
            ),
      ),
    );
    req.on('error', reject);
  });
}
