import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { envName } from './configuration-env';
import { CONFIGURATION_DEFAULTS } from './configuration.schema';
import {
  ConfigurationFileError,
  ConfigurationService,
  overridesFromEnv,
  readConfigurationFile,
} from './configuration.service';

describe(ConfigurationService.name, () => {
  let dir: string;
  let file: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-config-'));
    file = path.join(dir, 'config.json');
  });
  afterEach(() => fs.rmSync(dir, { force: true, recursive: true }));

  it('writes the defaults on first start', () => {
    const sut = new ConfigurationService(file, {});
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual(CONFIGURATION_DEFAULTS);
    expect(sut.snapshot().values).toEqual(CONFIGURATION_DEFAULTS);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it('reads a file without creating one (for commands that only read)', () => {
    expect(readConfigurationFile(file)).toBeNull();
    expect(fs.existsSync(file)).toBe(false);
    fs.writeFileSync(file, JSON.stringify({ port: 5000 }));
    expect(readConfigurationFile(file)).toEqual({ ...CONFIGURATION_DEFAULTS, port: 5000 });
    fs.writeFileSync(file, JSON.stringify({ port: -1 }));
    expect(() => readConfigurationFile(file)).toThrow(ConfigurationFileError);
  });

  it('names env variables after the fields and parses numbers', () => {
    expect(envName('pullRequestReconcileIntervalSeconds')).toBe('CODE_FACTORY_PULL_REQUEST_RECONCILE_INTERVAL_SECONDS');
    expect(
      overridesFromEnv({ CODE_FACTORY_HOST: '::1', CODE_FACTORY_PORT: '8080', CODE_FACTORY_LOG_LEVEL: '' }),
    ).toEqual({ host: '::1', port: 8080 });
  });

  it('fails fast on a broken file, naming it', () => {
    fs.writeFileSync(file, '{ not json');
    expect(() => new ConfigurationService(file, {})).toThrow(ConfigurationFileError);
    fs.writeFileSync(file, JSON.stringify({ port: -1 }));
    expect(() => new ConfigurationService(file, {})).toThrow(file);
  });

  it('applies live fields, defers the rest, and never writes overrides back', async () => {
    const sut = new ConfigurationService(file, { logLevel: 'debug', port: 0 });
    const changes: string[] = [];
    sut.changes$.subscribe((s) => changes.push(s.effective.logLevel));
    const snapshot = await sut.update({ host: '0.0.0.0', logLevel: 'warn' });
    expect(sut.get('logLevel')).toBe('warn');
    expect(sut.get('host')).toBe('127.0.0.1');
    expect(snapshot.restartRequiredFields).toEqual(['host']);
    expect(changes).toEqual(['warn']);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toMatchObject({ host: '0.0.0.0', logLevel: 'warn', port: 4310 });
  });
});
