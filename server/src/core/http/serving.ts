import { X509Certificate, createPrivateKey } from 'node:crypto';
import * as fs from 'node:fs';

import { CONNECTION_LIMITS } from './connection-guard';

/** How the manager is reached: plain HTTP on loopback, or TLS (or an explicit insecure choice) beyond it. */
export interface Serving {
  scheme: 'http' | 'https';
  /** The names and addresses in the certificate: also served as Host beyond the configured one. */
  certificateNames: string[];
}

/** Loopback's plain HTTP: the default, and what tests and the OpenAPI document run with. */
export const PLAIN_HTTP: Serving = { certificateNames: [], scheme: 'http' };

export interface ServingOptions {
  /** `none` is for loopback only: beyond it anyone on the network would control the agents. */
  authentication?: 'token' | 'none';
  /** PEM certificate (chain) and its key, for serving beyond loopback. */
  tlsCertPath?: string;
  tlsKeyPath?: string;
  /** Serve plain HTTP beyond loopback anyway: the person's explicit choice (a trusted network, a TLS proxy in front). */
  insecureHttp?: boolean;
}

export interface ServingPlan {
  serving: Serving;
  httpsOptions?: { cert: Buffer; key: Buffer; handshakeTimeout: number };
}

/** Thrown before anything listens: the CLI prints the message as it is. */
export class ServingRefused extends Error {
  override name = 'ServingRefused';
}

const LOOPBACK = /^(127(?:\.\d{1,3}){3}|::1|\[::1\]|localhost)$/i;

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host);
}

/** Every interface: served by loopback names (and a certificate's), never by what a client calls it. */
export function isWildcardHost(host: string): boolean {
  return host === '0.0.0.0' || host === '::';
}

/** An IPv6 address as a browser writes it in Host (`[fd7a:115c::1]`), whatever spelling it came in. */
export function canonicalIpv6(address: string): string {
  try {
    return new URL(`http://[${address.replace(/^\[|\]$/g, '')}]/`).hostname;
  } catch {
    return `[${address.toLowerCase()}]`;
  }
}

/**
 * Beyond loopback the owner's cookie, the device credentials and every agent's conversation cross
 * a network: so TLS, unless the person said `--insecure-http`. A certificate that does not load
 * (unreadable, not PEM, a key of another certificate) refuses the start, naming the file.
 */
export function planServing(host: string, options: ServingOptions): ServingPlan {
  const { tlsCertPath, tlsKeyPath } = options;
  if (options.authentication === 'none' && !isLoopbackHost(host)) {
    throw new ServingRefused(
      `authentication "none" is for loopback only: beyond it (--host ${host}) anyone who reaches the port would control the agents`,
    );
  }
  if ((tlsCertPath === undefined) !== (tlsKeyPath === undefined)) {
    throw new ServingRefused('--tls-cert and --tls-key go together: give both, or neither');
  }
  if (tlsCertPath === undefined || tlsKeyPath === undefined) {
    if (!isLoopbackHost(host) && options.insecureHttp !== true) {
      throw new ServingRefused(
        `serving beyond loopback (--host ${host}) requires TLS: give --tls-cert and --tls-key (for example from \`tailscale cert\`), or --insecure-http to serve plain HTTP anyway`,
      );
    }
    return { serving: PLAIN_HTTP };
  }
  const cert = readPem(tlsCertPath, '--tls-cert');
  const key = readPem(tlsKeyPath, '--tls-key');
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch (err) {
    throw new ServingRefused(`--tls-cert ${tlsCertPath} is not a PEM certificate: ${(err as Error).message}`);
  }
  try {
    if (!certificate.checkPrivateKey(createPrivateKey(key))) {
      throw new ServingRefused(`--tls-key ${tlsKeyPath} is not the key of the certificate ${tlsCertPath}`);
    }
  } catch (err) {
    if (err instanceof ServingRefused) {
      throw err;
    }
    throw new ServingRefused(`--tls-key ${tlsKeyPath} is not a PEM private key: ${(err as Error).message}`);
  }
  if (Date.parse(certificate.validTo) <= Date.now()) {
    throw new ServingRefused(
      `--tls-cert ${tlsCertPath} expired on ${certificate.validTo}: renew it (\`tailscale cert\` again)`,
    );
  }
  return {
    httpsOptions: { cert, handshakeTimeout: CONNECTION_LIMITS.headersTimeoutMs, key },
    serving: { certificateNames: certificateNames(certificate), scheme: 'https' },
  };
}

function readPem(file: string, flag: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new ServingRefused(
      `${flag} ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

/** `DNS:a.example, IP Address:100.64.0.1` → the names (wildcards left out: a Host is one name). */
function certificateNames(certificate: X509Certificate): string[] {
  const names: string[] = [];
  for (const entry of (certificate.subjectAltName ?? '').split(',')) {
    const [kind, value] = entry.trim().split(/:(.*)/s);
    if (!value || value.includes('*')) {
      continue;
    }
    if (kind === 'DNS') {
      names.push(value.toLowerCase());
    } else if (kind === 'IP Address') {
      names.push(value.includes(':') ? canonicalIpv6(value) : value);
    }
  }
  return names;
}
