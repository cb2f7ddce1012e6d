import * as http from 'node:http';
import * as net from 'node:net';

/** One generated request, fully resolved: what goes on the wire. */
export interface FuzzRequest {
  /** The OpenAPI operation it was generated from (`POST /api/requirements/{id}/reply`), or a pseudo label. */
  endpoint: string;
  method: string;
  /** Path and query, already percent-encoded where needed (sent as given). */
  path: string;
  /** Header values are latin1 strings (UTF-8 bytes smuggled as latin1 where the fuzzer wants non-ASCII). */
  headers: Record<string, string>;
  body?: Buffer;
  /** A raw byte string sent over a plain socket instead (malformed HTTP). */
  raw?: Buffer;
  /** Status the request must get (auth/host/origin refusals), if the fuzzer can know it. */
  expectStatus?: number;
  /** Node's own HTTP parser may answer this one (431, 400) without a JSON body. */
  lowLevel?: boolean;
  /** Which corruptions went into it (for the report). */
  tags: string[];
}

export interface FuzzResponse {
  status: number;
  contentType: string;
  text: string;
  /** The response was a stream we cut after its headers (SSE). */
  streamed: boolean;
  /** Transport-level failure: reset, timeout. */
  error?: string;
  ms: number;
}

const MAX_KEEP = 4096;

/** Sends one request over node:http (fresh connection each time), aborting streams after their headers. */
export function sendFuzz(origin: string, request: FuzzRequest, timeoutMs: number): Promise<FuzzResponse> {
  if (request.raw) {
    return sendRawSocket(origin, request.raw, timeoutMs);
  }
  const url = new URL(origin);
  const started = Date.now();
  return new Promise((resolve) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const done = (res: Omit<FuzzResponse, 'ms'>) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve({ ...res, ms: Date.now() - started });
      }
    };
    let req: http.ClientRequest;
    try {
      // Explicit framing: node:http would send a GET/DELETE body with neither Content-Length nor chunking.
      const headers = request.body
        ? { ...request.headers, 'Content-Length': String(request.body.length) }
        : request.headers;
      req = http.request({
        agent: false,
        headers,
        host: url.hostname,
        method: request.method,
        path: request.path,
        port: url.port,
        setHost: !Object.keys(request.headers).some((h) => h.toLowerCase() === 'host'),
      });
    } catch (err) {
      // The client refused to send it (invalid header characters): not the server's business.
      done({
        contentType: '',
        error: `client refused: ${(err as Error).message}`,
        status: -1,
        streamed: false,
        text: '',
      });
      return;
    }
    timer = setTimeout(() => {
      req.destroy();
      done({ contentType: '', error: 'timeout', status: 0, streamed: false, text: '' });
    }, timeoutMs);
    // An answer that arrived counts even if writing the rest of the body then failed (EPIPE,
    // ECONNRESET): a server may refuse a request before reading its body, and the client's
    // write error says nothing about whether the refusal was readable.
    let answered: (() => void) | undefined;
    req.on('response', (res) => {
      const contentType = String(res.headers['content-type'] ?? '');
      if (contentType.startsWith('text/event-stream')) {
        res.destroy();
        req.destroy();
        done({ contentType, status: res.statusCode ?? 0, streamed: true, text: '' });
        return;
      }
      const chunks: Buffer[] = [];
      let kept = 0;
      res.on('data', (chunk: Buffer) => {
        if (kept < MAX_KEEP) {
          chunks.push(chunk);
          kept += chunk.length;
        }
      });
      answered = () =>
        done({
          contentType,
          status: res.statusCode ?? 0,
          streamed: false,
          text: Buffer.concat(chunks).toString('utf8'),
        });
      res.on('end', answered);
      res.on('error', (err) =>
        done({
          contentType,
          error: `response: ${err.message}`,
          status: res.statusCode ?? 0,
          streamed: false,
          text: '',
        }),
      );
    });
    req.on('error', (err) => {
      if (answered) {
        answered();
        return;
      }
      done({
        contentType: '',
        error: `request: ${(err as NodeJS.ErrnoException).code ?? err.message}`,
        status: 0,
        streamed: false,
        text: '',
      });
    });
    if (request.body) {
      req.end(request.body);
    } else {
      req.end();
    }
  });
}

/** Writes bytes to a socket and parses whatever status line comes back. */
function sendRawSocket(origin: string, raw: Buffer, timeoutMs: number): Promise<FuzzResponse> {
  const url = new URL(origin);
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let data = '';
    let settled = false;
    const finish = (error?: string) => {
      if (settled) {
        return;
      }
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(data);
      const split = data.indexOf('\r\n\r\n');
      const head = split >= 0 ? data.slice(0, split) : data;
      const contentType = /content-type:\s*([^\r\n]*)/i.exec(head)?.[1] ?? '';
      resolve({
        contentType,
        error: match ? undefined : error,
        ms: Date.now() - started,
        status: match ? Number(match[1]) : 0,
        streamed: false,
        text: split >= 0 ? data.slice(split + 4) : '',
      });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    socket.on('connect', () => socket.end(raw));
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
      if (data.includes('\r\n\r\n')) {
        // A keep-alive server may hold the socket open: the answer is what we came for.
        setTimeout(() => finish(), 100);
      }
    });
    socket.on('end', () => finish('closed without an answer'));
    socket.on('close', () => finish('closed without an answer'));
    socket.on('error', (err) => finish(`socket: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
  });
}

/** UTF-8 bytes as a latin1 string, so node:http puts the raw bytes in a header. */
export function utf8Header(value: string): string {
  return Buffer.from(value, 'utf8').toString('latin1');
}
