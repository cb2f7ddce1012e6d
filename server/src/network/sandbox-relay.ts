// The first process of a run's sandbox when the run has a network namespace of its own (issue 45):
// nothing there reaches out but the Unix socket of the run's egress proxy, bound into the sandbox.
// This relay makes that socket usable by programs that only know TCP: it listens on loopback
// inside the namespace, on the proxy port (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY point there) and on
// each forwarded port (Agent Manager's own, a loopback model server's: what a CLI dials directly),
// then runs the agent's command and ends as it ends. A forwarded port goes out through the proxy
// as a CONNECT to the same port on the host's loopback, so the proxy's rules decide it too.
//
// The other way (a preview, issue 48 §2): a server the command runs on one of the exposed ports is
// in this namespace alone. The relay listens on the expose socket, a Unix socket beside the
// proxy's: a client writes one line, the port, and once the relay has connected to it inside it
// answers `OK` and the bytes flow (`ERR <code>` and the end when nothing listens there). The
// manager serves the host's loopback port from it.
//
// Node built-ins only: it runs from dist/ inside the sandbox, before anything else is there.
//
//   node sandbox-relay.js <proxy socket> <proxy port> <forwarded ports|-> <expose socket|-> <exposed ports|-> -- <command> [args…]
//
// Ports are comma-separated lists.
import { spawn } from 'node:child_process';
import * as net from 'node:net';

const HEADER_LIMIT = 8192;

function fail(message: string): never {
  process.stderr.write(`agent-manager network relay: ${message}\n`);
  process.exit(125);
}

/** Pipes both ways; either side gone takes the other. */
function join(a: net.Socket, b: net.Socket): void {
  a.pipe(b);
  b.pipe(a);
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
  a.on('close', () => b.destroy());
  b.on('close', () => a.destroy());
}

/** The proxy port: bytes as they are, to the proxy's socket. */
function relayProxy(socketPath: string, client: net.Socket): void {
  join(client, net.connect(socketPath));
}

/** A forwarded port: a CONNECT to the host's loopback port through the proxy, then the bytes. */
function relayForward(socketPath: string, port: number, client: net.Socket): void {
  client.pause();
  const upstream = net.connect(socketPath);
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end === -1) {
      if (head.length > HEADER_LIMIT) {
        upstream.destroy();
      }
      return;
    }
    upstream.off('data', onData);
    if (!/^HTTP\/1\.[01] 200/.test(head.toString('latin1', 0, end))) {
      // Refused: the program that dialled sees its connection close (the proxy recorded why).
      upstream.destroy();
      client.destroy();
      return;
    }
    const rest = head.subarray(end + 4);
    if (rest.length > 0) {
      client.write(rest);
    }
    join(client, upstream);
    client.resume();
  };
  upstream.on('data', onData);
  upstream.on('error', () => client.destroy());
  client.on('error', () => upstream.destroy());
  upstream.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
}

/** The expose socket: one line naming an exposed port, then the bytes to and from it. */
function relayExposed(exposed: Set<number>, client: net.Socket): void {
  let head = '';
  const onData = (chunk: Buffer) => {
    head += chunk.toString('latin1');
    const end = head.indexOf('\n');
    if (end === -1) {
      if (head.length > 16) {
        client.destroy();
      }
      return;
    }
    client.off('data', onData);
    client.pause();
    const port = Number(head.slice(0, end));
    const rest = Buffer.from(head.slice(end + 1), 'latin1');
    if (!exposed.has(port)) {
      client.end('ERR not_exposed\n');
      return;
    }
    const inside = net.connect(port, '127.0.0.1');
    const refused = (err: NodeJS.ErrnoException) => {
      if (!client.destroyed) {
        client.end(`ERR ${err.code ?? 'error'}\n`);
      }
    };
    inside.once('error', refused);
    inside.once('connect', () => {
      // From here on an error is the stream's end, never text in it.
      inside.off('error', refused);
      if (client.destroyed) {
        inside.destroy();
        return;
      }
      client.write('OK\n');
      if (rest.length > 0) {
        inside.write(rest);
      }
      join(client, inside);
      client.resume();
    });
  };
  client.on('data', onData);
  client.on('error', () => client.destroy());
}

function listen(port: number | string, onConnection: (client: net.Socket) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = net.createServer(onConnection);
    server.once('error', reject);
    const address = typeof port === 'number' ? { host: '127.0.0.1', port } : { path: port };
    server.listen(address, () => {
      server.unref();
      resolve();
    });
  });
}

async function main(): Promise<void> {
  // A signal for the run reaches its whole process group, the command included, and the manager
  // ends a run's tree by its marker. One sent to this process alone (a supervisor's, a person's)
  // is ignored, as the sandbox's init does: it must not end the agent, nor leave it without its
  // network. Ignored from the first instruction on; the relay ends when its command ends, and as
  // it ended.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.on(signal, () => undefined);
  }
  const argv = process.argv.slice(2);
  const separator = argv.indexOf('--');
  const [socketPath, proxyPortText, forwardedText, exposeSocket, exposedText] = argv.slice(0, separator);
  const command = argv.slice(separator + 1);
  const proxyPort = Number(proxyPortText);
  const ports = (text: string | undefined) => (text === '-' || text === undefined ? [] : text.split(',').map(Number));
  const forwarded = ports(forwardedText);
  const exposed = new Set(ports(exposedText));
  if (
    separator !== 5 ||
    !socketPath ||
    !exposeSocket ||
    command.length === 0 ||
    (exposeSocket === '-') !== (exposed.size === 0) ||
    [proxyPort, ...forwarded, ...exposed].some((p) => !Number.isInteger(p) || p < 1 || p > 65_535)
  ) {
    fail(
      'usage: sandbox-relay <proxy socket> <proxy port> <forwarded ports|-> <expose socket|-> <exposed ports|-> -- <command> [args…]',
    );
  }
  try {
    await listen(proxyPort, (client) => relayProxy(socketPath, client));
    for (const port of new Set(forwarded)) {
      await listen(port, (client) => relayForward(socketPath, port, client));
    }
    if (exposed.size > 0) {
      await listen(exposeSocket, (client) => relayExposed(exposed, client));
    }
  } catch (err) {
    fail(`cannot listen on loopback in the sandbox: ${(err as Error).message}`);
  }
  const child = spawn(command[0], command.slice(1), { stdio: 'inherit' });
  child.once('error', (err) => fail(`cannot run ${command[0]}: ${err.message}`));
  child.once('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}

void main();
