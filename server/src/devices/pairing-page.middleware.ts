import { Inject, Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';

import { credentialCookieOptions, readCookie } from '../core/http/credential-cookie';
import { RUNTIME, Runtime } from '../core/runtime';
import { deviceCookieName } from './device-cookie';
import { DEVICE_NAME_MAX, DevicesService, LinkState, PAIRING_SECRET } from './devices.service';

const PAIR_PATH = /^\/pair\/([^/]{1,100})$/;
/** The form holds a device name: a few bytes, url-encoded. */
const MAX_FORM = 4096;
/** A device's cookie outlives browser restarts (400 days: what browsers keep at most); revoking ends it sooner. */
const DEVICE_COOKIE_MS = 400 * 24 * 3600_000;

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '"': '&quot;', '&': '&amp;', "'": '&#39;', '<': '&lt;', '>': '&gt;' })[c] ?? c);

/** A pairing link's path without its secret, for logs: the secret is a credential until used. */
export function loggablePath(path: string): string {
  return path.replace(/^\/pair\/.*/, '/pair/…');
}

/**
 * `/pair/<secret>`: the page a pairing link opens. Opening it changes nothing (a chat app that
 * previews the link must not spend it); the page's button posts it back, which pairs this browser
 * and sets its device cookie. A used or expired link answers 410, one never issued 404. The
 * secret is checked before any body is read, and a body larger than a name is refused unread.
 */
@Injectable()
export class PairingPageMiddleware {
  private readonly secure: boolean;

  constructor(
    private readonly devices: DevicesService,
    @Inject(RUNTIME) runtime: Runtime,
  ) {
    this.secure = runtime.serving.scheme === 'https';
  }

  readonly handle = (req: Request, res: Response, next: NextFunction): void => {
    const match = PAIR_PATH.exec(req.path);
    if (!match?.[1]) {
      next();
      return;
    }
    const secret = match[1];
    if (req.method === 'GET' || req.method === 'HEAD') {
      this.show(secret, res).catch(next);
      return;
    }
    if (req.method === 'POST') {
      this.pair(secret, req, res).catch(next);
      return;
    }
    res.setHeader('Allow', 'GET, HEAD, POST');
    this.page(res, 405, '<h1>Not here</h1>');
  };

  private async show(secret: string, res: Response): Promise<void> {
    const found = await this.devices.linkState(secret);
    if (found.state === 'open') {
      this.page(res, 200, confirmBody(found.link.name));
    } else {
      this.refusal(res, found.state);
    }
  }

  private async pair(secret: string, req: Request, res: Response): Promise<void> {
    if (!PAIRING_SECRET.test(secret)) {
      this.refusal(res, 'unknown');
      return;
    }
    if (Number(req.headers['content-length'] ?? 0) > MAX_FORM) {
      this.page(res, 413, '<h1>Too much</h1><p>The form was larger than a device name.</p>');
      return;
    }
    const form = await readForm(req);
    if (form === null) {
      this.page(res, 413, '<h1>Too much</h1><p>The form was larger than a device name.</p>');
      return;
    }
    const cookieName = deviceCookieName(req.socket.localPort ?? 0, this.secure);
    const paired = await this.devices.redeem(secret, {
      name: form.get('name'),
      previousCredential: readCookie(req.headers.cookie, cookieName),
      userAgent: req.headers['user-agent'],
    });
    if (!('credential' in paired)) {
      this.refusal(res, paired.state);
      return;
    }
    res.cookie(cookieName, paired.credential, credentialCookieOptions(this.secure, DEVICE_COOKIE_MS));
    res.setHeader('Cache-Control', 'no-store');
    res.redirect(303, '/attention');
  }

  private refusal(res: Response, state: Exclude<LinkState['state'], 'open'>): void {
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

/**
 * The form's fields, or null when it is larger than any real one (reading stops there: what is
 * left is drained by the lingering-close middleware). Any other content type is an empty form.
 */
function readForm(req: Request): Promise<URLSearchParams | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_FORM) {
        req.off('data', onData);
        req.off('end', onEnd);
        resolve(null);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () =>
      resolve(
        new URLSearchParams(req.is('application/x-www-form-urlencoded') ? Buffer.concat(chunks).toString('utf8') : ''),
      );
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', reject);
  });
}
