import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import {
  SUPERVISOR_ENV_VARIABLE,
  readLaunchSecrets,
  separateSecrets,
  takeSupervisorEnv,
  writeLaunchSecrets,
} from './manager-launch';

describe('separateSecrets', () => {
  it('moves a PostgreSQL URL from the flags to CODE_FACTORY_DATABASE_URL, and keeps every other flag', () => {
    expect(separateSecrets(['--port', '0', '--db', 'postgres://am:s3cret@db/x', '--log-level', 'debug'])).toEqual({
      args: ['--port', '0', '--log-level', 'debug'],
      env: { CODE_FACTORY_DATABASE_URL: 'postgres://am:s3cret@db/x' },
    });
    expect(separateSecrets(['--db=postgresql://am:s3cret@db/x']).env).toEqual({
      CODE_FACTORY_DATABASE_URL: 'postgresql://am:s3cret@db/x',
    });
  });

  it('leaves a SQLite path and a --db-file name as flags: neither is a secret', () => {
    const args = [
      '--db',
      '/data/factory.sqlite',
      '--db-file',
      '/home/u/.am-db-url',
      '--config',
      '/x/postgres://not-a-flag',
    ];
    expect(separateSecrets(args)).toEqual({ args, env: {} });
  });
});

describe('takeSupervisorEnv', () => {
  it('reads the CODE_FACTORY_* variables handed over and removes the carrier from the environment', () => {
    const env: NodeJS.ProcessEnv = {
      [SUPERVISOR_ENV_VARIABLE]: JSON.stringify({ CODE_FACTORY_DATABASE_URL: 'postgres://a:b@h/d', PATH: '/evil' }),
      PATH: '/bin',
    };
    expect(takeSupervisorEnv(env)).toEqual({ CODE_FACTORY_DATABASE_URL: 'postgres://a:b@h/d' });
    expect(env).toEqual({ PATH: '/bin' });
  });

  it('takes nothing from a missing or malformed carrier', () => {
    expect(takeSupervisorEnv({})).toEqual({});
    expect(takeSupervisorEnv({ [SUPERVISOR_ENV_VARIABLE]: '{not json' })).toEqual({});
    expect(takeSupervisorEnv({ [SUPERVISOR_ENV_VARIABLE]: '["x"]' })).toEqual({});
  });
});

describe('launch secrets file', () => {
  it('is written 0600, read back, and removed when there is nothing to keep', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-launch-'));
    try {
      const file = path.join(dir, 'daemon-secrets.json');
      writeLaunchSecrets(file, { CODE_FACTORY_DATABASE_URL: 'postgres://a:b@h/d' });
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(readLaunchSecrets(file)).toEqual({ CODE_FACTORY_DATABASE_URL: 'postgres://a:b@h/d' });
      writeLaunchSecrets(file, {});
      expect(fs.existsSync(file)).toBe(false);
      expect(readLaunchSecrets(file)).toEqual({});
    } finally {
      fs.rmSync(dir, { force: true, recursive: true });
    }
  });
});
