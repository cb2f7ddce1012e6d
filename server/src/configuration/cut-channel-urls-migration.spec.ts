import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { Client } from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';

import { usePlainIntegers } from '../core/core.module';
import { MIGRATIONS } from '../core/database/migrations';
import { CutChannelUrls1766545000000 } from '../core/database/migrations/1766545000000-cut-channel-urls';
import { SnakeNamingStrategy } from '../core/database/snake-naming.strategy';
import { redactChannelUrl } from './manager-configuration.service';

/**
 * Configuration events written before channel URLs were cut (issue 47 §4) hold them whole, and a
 * paired device reads the event stream from its start: the migration cuts them the way the public
 * view does, and leaves every other event, and every other field, as it was.
 */
const URL = process.env.TEST_DATABASE_URL;

describe.each([
  ['SQLite', true],
  ['PostgreSQL', URL !== undefined],
])('the migration that cuts channel URLs in past configuration events on %s', (store, enabled) => {
  const suffix = `${process.pid}_${Date.now()}`;
  let dir: string | undefined;
  let client: Client | undefined;
  let db: DataSource;
  const channels = [
    { delaySeconds: 0, id: 'phone', kind: 'ntfy', person: null, reasons: null, url: 'https://ntfy.sh/secret-topic' },
    { delaySeconds: 0, id: 'site', kind: 'webhook', person: null, reasons: null, url: 'https://hooks.example' },
    { delaySeconds: 0, id: 'desk', kind: 'desktop', person: null, reasons: null, url: null },
  ];
  const configurationEvent = JSON.stringify({
    configuration: {
      effective: { logLevel: 'info', notificationChannels: channels },
      values: { notificationChannels: channels },
    },
  });
  const otherEvent = JSON.stringify({ note: 'https://ntfy.sh/secret-topic', notificationChannels: channels });

  (enabled ? beforeAll : () => undefined)(async () => {
    const common = {
      migrations: MIGRATIONS.filter((m) => m !== CutChannelUrls1766545000000),
      migrationsRun: true,
      namingStrategy: new SnakeNamingStrategy(),
    };
    let options: DataSourceOptions;
    if (store === 'SQLite') {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-cut-channels-'));
      options = { ...common, database: path.join(dir, 'f.sqlite'), type: 'sqlite' };
    } else {
      usePlainIntegers();
      client = new Client({ connectionString: URL });
      await client.connect();
      await client.query(`CREATE SCHEMA am_spec_channels_${suffix}`);
      options = {
        ...common,
        extra: { options: `-c search_path=am_spec_channels_${suffix}` },
        schema: `am_spec_channels_${suffix}`,
        type: 'postgres',
        url: URL,
      };
    }
    db = await new DataSource(options).initialize();
    const p = (n: number) => (store === 'SQLite' ? '?' : `$${n}`);
    for (const [type, payload] of [
      ['manager.configuration.updated', configurationEvent],
      ['requirement.created', otherEvent],
      ['manager.configuration.updated', 'not json'],
    ]) {
      await db.query(
        `INSERT INTO manager_event (type, actor_kind, payload, created_at) VALUES (${p(1)}, 'human', ${p(2)}, '2026-12-01T00:00:00.000Z')`,
        [type, payload],
      );
    }
    await new CutChannelUrls1766545000000().up(db.createQueryRunner());
  });

  (enabled ? afterAll : () => undefined)(async () => {
    await db?.destroy();
    if (client) {
      await client.query(`DROP SCHEMA IF EXISTS am_spec_channels_${suffix} CASCADE`);
      await client.end();
    }
    if (dir) {
      fs.rmSync(dir, { force: true, recursive: true });
    }
  });

  (enabled ? it : it.skip)(
    'cuts each channel URL after its host, as the API shows it, and touches nothing else',
    async () => {
      const rows = await db.query<Array<{ type: string; payload: string }>>(
        'SELECT type, payload FROM manager_event ORDER BY id',
      );
      const [configuration, other, broken] = rows;
      const cut = JSON.parse(configuration.payload);
      const shown = channels.map((c) => ({ ...c, url: redactChannelUrl(c.url) }));
      expect(cut.configuration.effective).toEqual({ logLevel: 'info', notificationChannels: shown });
      expect(cut.configuration.values.notificationChannels).toEqual(shown);
      expect(shown.map((c) => c.url)).toEqual(['https://ntfy.sh/…', 'https://hooks.example', null]);
      expect(configuration.payload).not.toContain('secret-topic');
      expect(other.payload).toBe(otherEvent);
      expect(broken.payload).toBe('not json');
    },
  );
});
