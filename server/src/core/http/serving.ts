import { X509Certificate, createPrivateKey } from 'node:crypto';
import * as fs from 'node:fs';

/** How the manager is reached: plain HTTP on loopback, or TLS (or an explicit insecure choice) beyond it. */
export interface Serving {
  scheme: 'http' | 'https';
  /** The names and addresses in the certificate: also served as Host beyond the configured one. */
  certificateNames: string[];
}

export interface ServingOptions {
  /** PEM certificate (chain) and its key, for serving beyond loopback. */
  tlsCertPath?: string;
  tlsKeyPath?: string;
  /** Serve plain HTTP beyond loopback anyway: the person's explicit choice (a trusted network, a TLS proxy in front). */
  insecureHttp?: boolean;
}

export interface ServingPlan {
  serving: Serving;
  httpsOptions?: { cert: Buffer; key: Buffer };
}

/** Thrown before anything listens: the CLI prints the message as it is. */
export class ServingRefused extends Error {
  override name = 'ServingRefused';
}

const LOOPBACK = /^(127(?:\.\d{1,3}){3}|::1|\[::1\]|localhost)$/i;

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host);
}

/**
 * Beyond loopback the owner's cookie, the device credentials and every agent's conversation cross
 * a network: so TLS, unless the person said `--insecure-http`. A certificate that does not load
 * (unreadable, not PEM, a key of another certificate) refuses the start, naming the file.
 */
export function planServing(host: string, options: ServingOptions): ServingPlan {
  const { tlsCertPath, tlsKeyPath } = options;
  if ((tlsCertPath === undefined) !== (tlsKeyPath === undefined)) {
    throw new ServingRefused('--tls-cert and --tls-key go together: give both, or neither');
  }
  if (tlsCertPath === undefined || tlsKeyPath === undefined) {
    if (!isLoopbackHost(host) && options.insecureHttp !== true) {
      throw new ServingRefused(
        `serving beyond loopback (--host ${host}) requires TLS: give --tls-cert and --tls-key (for example from \`tailscale cert\`), or --insecure-http to serve plain HTTP anyway`,
      );
    }
    return { serving: { certificateNames: [], scheme: 'http' } };
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
  return { httpsOptions: { cert, key }, serving: { certificateNames: certificateNames(certificate), scheme: 'https' } };
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
      names.push(value.includes(':') ? `[${value.toLowerCase()}]` : value);
    }
  }
  return names;
}
