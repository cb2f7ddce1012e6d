import * as fs from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import * as tls from 'node:tls';

export interface ConnectionLimits {
  /** Open connections at most; at the cap the oldest one still sending its headers makes room. */
  maxConnections: number;
  /** A connection must have sent a request's complete headers within this. */
  headersTimeoutMs: number;
  /** A request (headers and body, not the answer) must have arrived within this. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** How often deadlines are checked; a late connection is closed at most this much after its deadline. */
  checkIntervalMs: number;
}

/** At most half the process's file descriptors go to sockets: the database, logs, attachments and agents need the rest. */
function defaultMaxConnections(): number {
  const fromLimit = Math.floor(openFileLimit() / 2);
  return Math.max(64, Math.min(4_096, fromLimit));
}

/** The soft RLIMIT_NOFILE (Node raises it to the hard limit at start); Linux only, else unknown. */
export function openFileLimit(): number {
  try {
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    return match?.[1] && match[1] !== 'unlimited' ? Number(match[1]) : Infinity;
  } catch {
    return Infinity;
  }
}

export const CONNECTION_LIMITS: ConnectionLimits = {
  checkIntervalMs: 1_000,
  headersTimeoutMs: 15_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: defaultMaxConnections(),
  requestTimeoutMs: 60_000,
};

const REQUEST_TIMEOUT = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';

export interface ConnectionGuard {
  /** Open connections, and those of them still waiting for their first request's headers. */
  counts(): { open: number; waiting: number };
}

/**
 * Bounds what connections can hold, whatever a local process sends. Thousands of sockets that
 * drip header bytes (or send nothing) used to exhaust the file descriptors, and every request
 * was refused. Node's own `headersTimeout` only starts at a request's first byte and is checked
 * every 30 s; here every new connection must complete its first request's headers within
 * `headersTimeoutMs` (later keep-alive requests are held to the same by Node's timer, checked
 * every `checkIntervalMs`). At `maxConnections`, the oldest connection still waiting for its
 * headers is closed to admit the new one (only when none is waiting is the newcomer refused),
 * so a flood of slow sockets evicts itself while real clients, which send their headers at
 * once, are served. `requestTimeout` covers a request's receipt only: an SSE stream or a long
 * download, whose request arrived long ago, is never cut by it.
 *
 * Over TLS a request's socket is the TLS socket, not the TCP one `connection` gave: the wait for
 * headers is then kept on the TLS socket from its handshake (`secureConnection`), so its request
 * ends it and an expiry's 408 goes out encrypted; the handshake itself is bounded by the server's
 * `handshakeTimeout` (given when the server is made).
 */
export function guardConnections(server: Server, limits: ConnectionLimits = CONNECTION_LIMITS): ConnectionGuard {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // Read when the server starts listening.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = limits.checkIntervalMs;

  const secure = server instanceof tls.Server;
  const open = new Set<Socket>();
  /** Connections without a first request yet, oldest first (Map keeps insertion order), with when they opened. */
  const waiting = new Map<Socket, number>();

  const expire = (socket: Socket) => {
    waiting.delete(socket);
    if (socket.writable) {
      socket.write(REQUEST_TIMEOUT, () => socket.destroy());
      // A peer that reads nothing would leave the write pending.
      setTimeout(() => socket.destroy(), 1_000).unref();
    } else {
      socket.destroy();
    }
  };

  server.on('connection', (socket: Socket) => {
    if (open.size >= limits.maxConnections) {
      const oldest = waiting.keys().next();
      if (oldest.done) {
        socket.destroy();
        return;
      }
      waiting.delete(oldest.value);
      open.delete(oldest.value);
      oldest.value.destroy();
    }
    open.add(socket);
    if (!secure) {
      waiting.set(socket, Date.now());
    }
    socket.once('close', () => {
      open.delete(socket);
      waiting.delete(socket);
    });
  });
  if (secure) {
    server.on('secureConnection', (socket: tls.TLSSocket) => {
      waiting.set(socket, Date.now());
      socket.once('close', () => waiting.delete(socket));
    });
  }
  server.on('request', (req: { socket: Socket }) => {
    waiting.delete(req.socket);
  });

  const sweep = setInterval(() => {
    const deadline = Date.now() - limits.headersTimeoutMs;
    for (const [socket, openedAt] of waiting) {
      if (openedAt > deadline) {
        break;
      }
      expire(socket);
    }
  }, limits.checkIntervalMs);
  sweep.unref();
  server.once('close', () => clearInterval(sweep));

  return { counts: () => ({ open: open.size, waiting: waiting.size }) };
}
