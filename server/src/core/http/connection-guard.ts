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
 * Over TLS a request's socket is the TLS socket, not the TCP one `connection` gave: a connection
 * waits as its TCP socket until its handshake ends (`secureConnection`), then as its TLS socket
 * (same deadline, from when it opened), so its request ends the wait and an expiry's 408 goes out
 * encrypted; one still handshaking is simply closed. Either way it can be evicted at the cap: a
 * flood that never says hello is no better off than one that never sends headers.
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
    if (secure && !(socket instanceof tls.TLSSocket)) {
      socket.destroy(); // still in its handshake: no HTTP answer can be read there
      return;
    }
    if (socket.writable) {
      socket.write(REQUEST_TIMEOUT, () => socket.destroy());
      // A peer that reads nothing would leave the write pending.
      setTimeout(() => socket.destroy(), 1_000).unref();
    } else {
      socket.destroy();
    }
  };

  /** Over TLS: each handshaking TCP socket by its peer's address and port, to find it from its TLS socket. */
  const handshaking = new Map<string, Socket>();
  const peer = (socket: Socket) => `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`;

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
    waiting.set(socket, Date.now());
    const key = peer(socket);
    if (secure) {
      handshaking.set(key, socket);
    }
    socket.once('close', () => {
      open.delete(socket);
      waiting.delete(socket);
      if (handshaking.get(key) === socket) {
        handshaking.delete(key);
      }
    });
  });
  if (secure) {
    server.on('secureConnection', (tlsSocket: tls.TLSSocket) => {
      const key = peer(tlsSocket);
      const raw = handshaking.get(key);
      handshaking.delete(key);
      const openedAt = raw === undefined ? Date.now() : (waiting.get(raw) ?? Date.now());
      if (raw !== undefined) {
        waiting.delete(raw);
      }
      waiting.set(tlsSocket, openedAt);
      tlsSocket.once('close', () => waiting.delete(tlsSocket));
    });
  }
  server.on('request', (req: { socket: Socket }) => {
    waiting.delete(req.socket);
  });

  const sweep = setInterval(() => {
    const deadline = Date.now() - limits.headersTimeoutMs;
    // Every entry is looked at (at most maxConnections): a TLS socket joins the map at its
    // handshake's end with its connection's older deadline, so the map is not in deadline order.
    for (const [socket, openedAt] of waiting) {
      if (openedAt <= deadline) {
        expire(socket);
      }
    }
  }, limits.checkIntervalMs);
  sweep.unref();
  server.once('close', () => clearInterval(sweep));

  return { counts: () => ({ open: open.size, waiting: waiting.size }) };
}
