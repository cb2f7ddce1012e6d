import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { carriesPassword, concealedArguments, readDatabaseUrlFile } from './secret-arguments';

describe('carriesPassword', () => {
  it('finds a password in the user info or a password-like parameter', () => {
    expect(carriesPassword('postgres://am:s3cret@db:5432/x')).toBe(true);
    expect(carriesPassword('postgres://am@db/x?password=s3cret')).toBe(true);
    expect(carriesPassword('postgres://am@db/x?sslmode=require')).toBe(false);
    expect(carriesPassword('postgres://db/x')).toBe(false);
  });
});

describe('concealedArguments', () => {
  it('removes the password of every database URL, as a separate argument or inline', () => {
    expect(
      concealedArguments([
        'node',
        '/bin/agent-manager.js',
        'start',
        '--db',
        'postgres://am:s3cret@db/x',
        '--port',
        '0',
      ]),
    ).toEqual(['node', '/bin/agent-manager.js', 'start', '--db', 'postgres://am@db/x', '--port', '0']);
    expect(concealedArguments(['--to=postgresql://am:s3cret@db/x'])?.join(' ')).not.toContain('s3cret');
  });

  it('changes nothing without a password', () => {
    expect(concealedArguments(['node', 'x', 'start', '--db', 'postgres://am@db/x'])).toBeNull();
    expect(concealedArguments(['node', 'x', 'status'])).toBeNull();
  });
});

describe('readDatabaseUrlFile', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-db-file-'))));
  afterEach(() => fs.rmSync(dir, { force: true, recursive: true }));

  const write = (content: string, mode: number) => {
    const file = path.join(dir, 'db-url');
    fs.writeFileSync(file, content, { mode });
    fs.chmodSync(file, mode);
    return file;
  };

  it('reads the first non-empty line of a file only its owner can read', () => {
    expect(readDatabaseUrlFile(write('\npostgres://am:s3cret@db/x\n', 0o600))).toBe('postgres://am:s3cret@db/x');
    expect(readDatabaseUrlFile(write('postgres://am:s3cret@db/x', 0o400))).toBe('postgres://am:s3cret@db/x');
  });

  it('refuses a file others can read, one without a URL, and a missing one', () => {
    expect(() => readDatabaseUrlFile(write('postgres://am:s3cret@db/x\n', 0o644))).toThrow(
      /can be read by other users \(mode 0644\): `chmod 600 /,
    );
    expect(() => readDatabaseUrlFile(write('/data/factory.sqlite\n', 0o600))).toThrow(/must hold a postgres:\/\/… URL/);
    expect(() => readDatabaseUrlFile(path.join(dir, 'none'))).toThrow(/ENOENT/);
  });
});
