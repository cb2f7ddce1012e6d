const tokens = new Map<string, string>();

/** Remembers a manager's token so requests to its origin authenticate by default. */
/**
 * JSON as the suites read it. A test asserts on the fields the server decides, one by one, and
 * its expectations are the check; restating every answer's type here would add nothing.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
export type Json = any;

export function registerToken(origin: string, token: string): void {
  tokens.set(origin, token);
}

/** Default credentials for `url`'s origin unless the caller brings its own (or opts out). */
export function authHeaders(url: string, headers: Record<string, string>, auth = true): Record<string, string> {
  const origin = new URL(url).origin;
  const own = Object.keys(headers).some((h) => ['authorization', 'cookie'].includes(h.toLowerCase()));
  const token = tokens.get(origin);
  return auth && !own && token ? { Authorization: `Bearer ${token}`, ...headers } : headers;
}

/**
 * Raw HTTP for requests the typed client cannot express (bad JSON, wrong types, odd headers).
 * Authenticates with the manager's token unless `auth` is false or the caller sets credentials.
 */
export async function send(
  origin: string,
  method: string,
  path: string,
  body?: string | Buffer | object,
  headers: Record<string, string> = {},
  { auth = true }: { auth?: boolean } = {},
): Promise<{ status: number; headers: Headers; json: Json; text: string }> {
  const isRaw = typeof body === 'string' || Buffer.isBuffer(body);
  const response = await fetch(`${origin}${path}`, {
    body: body === undefined ? undefined : isRaw ? (body as string) : JSON.stringify(body),
    headers: authHeaders(
      `${origin}${path}`,
      { ...(body !== undefined && !isRaw ? { 'Content-Type': 'application/json' } : {}), ...headers },
      auth,
    ),
    method,
    redirect: 'manual',
  });
  const text = await response.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { headers: response.headers, json, status: response.status, text };
}

/**
 * `send`, named for a request that is untyped on purpose: a malformed or oversized body, a wrong
 * content type, odd or missing credentials headers, an undocumented route. Every other request
 * goes through the typed client (`./api`); `npm run architecture` counts the two apart.
 */
export const sendUntyped = send;

/**
 * Like `send`, over node:http, for headers fetch() will not send as given (Host).
 */
export function sendRaw(
  origin: string,
  method: string,
  path: string,
  body: string | undefined,
  headers: Record<string, string>,
  { auth = true }: { auth?: boolean } = {},
): Promise<{ status: number; json: Json; text: string }> {
  const http = require('node:http') as typeof import('node:http');
  const url = new URL(path, origin);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { headers: authHeaders(url.toString(), headers, auth), method }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let json: unknown = null;
        try {
          json = JSON.parse(text);
        } catch {
          // not JSON
        }
        resolve({ json, status: res.statusCode ?? 0, text });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
