import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { SecretDefinition } from '@libs/contracts';

import type { ConfigurationService } from '../configuration/configuration.service';
import { parseSecretDefinitions } from './secret-definitions';
import { SecretsService, secretStates } from './secrets.service';

function service(secrets: SecretDefinition[]): SecretsService {
  return new SecretsService({ get: () => secrets } as unknown as ConfigurationService);
}

describe('configured secrets (issue 45)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-secrets-'));
  const file = (name: string, text: string, mode: number) => {
    const at = path.join(dir, name);
    fs.writeFileSync(at, text, { mode });
    fs.chmodSync(at, mode);
    return at;
  };

  beforeEach(() => {
    process.env.AM_TEST_TOKEN = 'env-token-value';
  });
  afterEach(() => {
    delete process.env.AM_TEST_TOKEN;
  });
  afterAll(() => fs.rmSync(dir, { force: true, recursive: true }));

  it('reads a value from the manager’s variable or from a file only its owner may read, never one others could', () => {
    const own = file('own', 'file-value\n', 0o600);
    const open = file('open', 'open-value', 0o644);
    const states = secretStates([
      { name: 'AM_TEST_TOKEN' },
      { file: own, name: 'FROM_FILE' },
      { file: open, name: 'WORLD_READABLE' },
      { name: 'AM_TEST_ABSENT' },
      { file: path.join(dir, 'missing'), name: 'NO_FILE' },
    ]);
    expect(states.map((s) => [s.name, s.available])).toEqual([
      ['AM_TEST_TOKEN', true],
      ['FROM_FILE', true],
      ['WORLD_READABLE', false],
      ['AM_TEST_ABSENT', false],
      ['NO_FILE', false],
    ]);
    expect(states[2].problem).toMatch(/may be read or written by others \(mode 644\): chmod 600 it/);
    expect(states[3].problem).toMatch(/has no AM_TEST_ABSENT/);
    expect(JSON.stringify(states)).not.toMatch(/env-token-value|file-value|open-value/);
    const secrets = service([{ name: 'AM_TEST_TOKEN' }, { file: own, name: 'FROM_FILE' }]);
    expect(secrets.environment()).toEqual({ AM_TEST_TOKEN: 'env-token-value', FROM_FILE: 'file-value' });
    // Previews (issue 48) get only the ones the person marked for them.
    expect(secrets.previewEnvironment()).toEqual({});
    const marked = service([
      { name: 'AM_TEST_TOKEN', preview: true },
      { file: own, name: 'FROM_FILE', preview: false },
    ]);
    expect(marked.previewEnvironment()).toEqual({ AM_TEST_TOKEN: 'env-token-value' });
  });

  it('masks every value, the longest first, and leaves text without one as it is', () => {
    process.env.AM_TEST_LONG = 'env-token-value-and-more';
    try {
      const secrets = service([{ name: 'AM_TEST_TOKEN' }, { name: 'AM_TEST_LONG' }]);
      expect(secrets.mask('a env-token-value-and-more b env-token-value c')).toBe(
        'a [secret AM_TEST_LONG] b [secret AM_TEST_TOKEN] c',
      );
      expect(secrets.mask('nothing here')).toBe('nothing here');
      expect(secrets.maskNullable(null)).toBeNull();
    } finally {
      delete process.env.AM_TEST_LONG;
    }
  });

  it('gives the proxy a header for the one host named, formatted', () => {
    const secrets = service([
      { format: 'Bearer {value}', header: 'Authorization', host: 'npm.pkg.github.com', name: 'AM_TEST_TOKEN' },
      { name: 'AM_TEST_ABSENT', header: 'X-Key', host: 'example.com' },
    ]);
    expect(secrets.injections()).toEqual([
      {
        header: 'Authorization',
        host: 'npm.pkg.github.com',
        name: 'AM_TEST_TOKEN',
        port: null,
        rule: 'npm.pkg.github.com',
        value: 'Bearer env-token-value',
      },
    ]);
  });

  it('adds no header whose value would break the request (a line break), and says why', () => {
    process.env.AM_TEST_BROKEN = 'two\nlines';
    try {
      const definitions = [{ header: 'Authorization', host: 'example.com', name: 'AM_TEST_BROKEN' }];
      expect(service(definitions).injections()).toEqual([]);
      expect(secretStates(definitions)[0]).toMatchObject({
        available: false,
        problem: expect.stringContaining('cannot carry'),
      });
    } finally {
      delete process.env.AM_TEST_BROKEN;
    }
  });

  it('refuses definitions that are not one, naming each field', () => {
    const { errors } = parseSecretDefinitions([
      { name: 'GOOD' },
      { name: 'GOOD' },
      { header: 'Host', host: 'example.com', name: 'HOSTILE' },
      { host: 'example.com', name: 'NO_HEADER' },
      { format: 'x\r\ny{value}', header: 'X-A', host: 'example.com', name: 'CRLF' },
      { extra: 1, name: 'EXTRA' },
      'text',
      { name: 'PREVIEW', preview: 'yes' },
    ]);
    expect(errors).toEqual([
      'secrets[1].name "GOOD" is defined twice',
      'secrets[2].header "Host" is not a header a secret may set',
      "secrets[3]: host and header go together (the proxy adds the header to that host's requests)",
      'secrets[4].format must hold {value} on one line (at most 500 characters)',
      'secrets[5].extra should not exist',
      'secrets[6] must be an object ({name, file?, host?, header?, format?, preview?})',
      'secrets[7].preview must be true or false',
    ]);
  });
});
