import { generateKeyPair, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import * as tls from 'node:tls';
import { promisify } from 'node:util';

import * as forge from 'node-forge';

const generate = promisify(generateKeyPair);
/** Leaf certificates kept per host (a run talks to a handful of secret hosts). */
const LEAVES_MAX = 256;
const DAY_MS = 24 * 60 * 60 * 1000;

async function rsaKeys(): Promise<{ privateKey: string; publicKey: string }> {
  return generate('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { format: 'pem', type: 'pkcs8' },
    publicKeyEncoding: { format: 'pem', type: 'spki' },
  });
}

function serial(): string {
  // Positive (top bit clear) and unique enough that no client caches two certificates as one.
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f;
  return bytes.toString('hex');
}

/**
 * The certificate authority the run's proxy presents when it must read a request to add a
 * secret's header to it (issue 45): made in memory when first needed, its key never written
 * anywhere, its certificate given to runs so their clients trust it. It signs a certificate for
 * each host a secret goes to, and for no other: every other tunnel stays end to end.
 */
export class RunCertificates {
  private readonly leaves = new Map<string, { context: tls.SecureContext; renewAt: number }>();

  private constructor(
    readonly caPem: string,
    private readonly caKey: forge.pki.rsa.PrivateKey,
    private readonly caCert: forge.pki.Certificate,
    private readonly leafKeyPem: string,
    private readonly leafPublic: forge.pki.rsa.PublicKey,
  ) {}

  static async create(now = Date.now()): Promise<RunCertificates> {
    const [ca, leaf] = await Promise.all([rsaKeys(), rsaKeys()]);
    const caKey = forge.pki.privateKeyFromPem(ca.privateKey);
    const cert = forge.pki.createCertificate();
    cert.publicKey = forge.pki.publicKeyFromPem(ca.publicKey);
    cert.serialNumber = serial();
    cert.validity.notBefore = new Date(now - DAY_MS);
    cert.validity.notAfter = new Date(now + 365 * DAY_MS);
    const name = [
      { name: 'commonName', value: `Agent Manager run proxy ${randomBytes(4).toString('hex')}` },
      { name: 'organizationName', value: 'Agent Manager (local)' },
    ];
    cert.setSubject(name);
    cert.setIssuer(name);
    cert.setExtensions([
      { cA: true, critical: true, name: 'basicConstraints', pathLenConstraint: 0 },
      { critical: true, cRLSign: true, keyCertSign: true, name: 'keyUsage' },
      { name: 'subjectKeyIdentifier' },
    ]);
    cert.sign(caKey, forge.md.sha256.create());
    return new RunCertificates(
      forge.pki.certificateToPem(cert),
      caKey,
      cert,
      leaf.privateKey,
      forge.pki.publicKeyFromPem(leaf.publicKey),
    );
  }

  /** The TLS context that presents `host` signed by this authority (made once per host). */
  contextFor(host: string, now = Date.now()): tls.SecureContext {
    const known = this.leaves.get(host);
    // Made again a day before it would expire: a manager may run for months.
    if (known && now < known.renewAt) {
      return known.context;
    }
    const cert = forge.pki.createCertificate();
    cert.publicKey = this.leafPublic;
    cert.serialNumber = serial();
    cert.validity.notBefore = new Date(now - DAY_MS);
    cert.validity.notAfter = new Date(now + 30 * DAY_MS);
    cert.setSubject([{ name: 'commonName', value: host.slice(0, 64) }]);
    cert.setIssuer(this.caCert.subject.attributes);
    cert.setExtensions([
      { cA: false, name: 'basicConstraints' },
      { digitalSignature: true, keyEncipherment: true, name: 'keyUsage' },
      { name: 'extKeyUsage', serverAuth: true },
      { altNames: [isIP(host) === 0 ? { type: 2, value: host } : { ip: host, type: 7 }], name: 'subjectAltName' },
    ]);
    cert.sign(this.caKey, forge.md.sha256.create());
    const context = tls.createSecureContext({ cert: forge.pki.certificateToPem(cert), key: this.leafKeyPem });
    if (this.leaves.size >= LEAVES_MAX) {
      this.leaves.delete(this.leaves.keys().next().value as string);
    }
    this.leaves.set(host, { context, renewAt: now + 29 * DAY_MS });
    return context;
  }
}
