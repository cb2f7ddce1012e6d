import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface Certificate {
  certPath: string;
  keyPath: string;
  cert: Buffer;
  key: Buffer;
}

/**
 * A self-signed certificate for `names` (`DNS:x` / `IP:y` entries of its subjectAltName), made
 * by Debian's openssl in `dir`: what `tailscale cert` gives a person, minus the CA.
 */
export function selfSignedCertificate(dir: string, name: string, subjectAltName: string): Certificate {
  fs.mkdirSync(dir, { recursive: true });
  const certPath = path.join(dir, `${name}.crt`);
  const keyPath = path.join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-addext',
      `subjectAltName=${subjectAltName}`,
      '-keyout',
      keyPath,
      '-out',
      certPath,
    ],
    { stdio: 'ignore' },
  );
  return { cert: fs.readFileSync(certPath), certPath, key: fs.readFileSync(keyPath), keyPath };
}

export function temporaryDirectory(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}
