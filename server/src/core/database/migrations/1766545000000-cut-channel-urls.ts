import { MigrationInterface, QueryRunner } from 'typeorm';

import { isPostgres } from './dialect';

/** Where a channel's URL is cut, as the configuration's public view cuts it (kept here: a migration never changes). */
const CUT = '/…';

function cut(url: unknown): unknown {
  if (typeof url !== 'string') {
    return url;
  }
  try {
    const parsed = new URL(url);
    return parsed.pathname === '/' && parsed.search === '' ? parsed.origin : `${parsed.origin}${CUT}`;
  } catch {
    return CUT;
  }
}

/** The channels of one view of the configuration (`effective` or `values`), their URLs cut; anything else as it was. */
function cutChannels(view: unknown): boolean {
  const channels = (view as { notificationChannels?: unknown } | null)?.notificationChannels;
  if (!Array.isArray(channels)) {
    return false;
  }
  let changed = false;
  for (const channel of channels as Array<{ url?: unknown }>) {
    const shorter = cut(channel?.url);
    if (channel && shorter !== channel.url) {
      channel.url = shorter;
      changed = true;
    }
  }
  return changed;
}

/**
 * Issue 47 §4: a notification channel's URL (an ntfy topic, a Slack hook) is a secret past its
 * host, and paired devices read the event stream from its start. The configuration events written
 * before the public view cut those URLs still hold them whole: cut them there too.
 */
export class CutChannelUrls1766545000000 implements MigrationInterface {
  name = 'CutChannelUrls1766545000000';

  async up(q: QueryRunner): Promise<void> {
    const rows = (await q.query(
      "SELECT id, payload FROM manager_event WHERE type = 'manager.configuration.updated'",
    )) as Array<{ id: number | string; payload: string }>;
    const p = (n: number) => (isPostgres(q) ? `$${n}` : `?${n}`);
    for (const row of rows) {
      let payload: { configuration?: { effective?: unknown; values?: unknown } };
      try {
        payload = JSON.parse(row.payload) as typeof payload;
      } catch {
        continue;
      }
      const effective = cutChannels(payload.configuration?.effective);
      const values = cutChannels(payload.configuration?.values);
      if (effective || values) {
        await q.query(`UPDATE manager_event SET payload = ${p(1)} WHERE id = ${p(2)}`, [
          JSON.stringify(payload),
          row.id,
        ]);
      }
    }
  }

  async down(): Promise<void> {
    // What was cut is gone: nothing to put back.
  }
}
