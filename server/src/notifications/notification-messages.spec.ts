import type { NotificationChannel, NotificationDeliveryItem } from '@libs/contracts';

import { messageFor, signature } from './notification-messages';

const item = (k: number, summary = 'Which one?'): NotificationDeliveryItem => ({
  id: `atn_${k}`,
  link: `http://127.0.0.1:4310/requirements/req_${k}`,
  reason: 'waiting_reply',
  requirement: { id: `req_${k}`, title: `Task ${k}` },
  since: '2026-12-07T00:00:00.000Z',
  summary,
});
const channel = (kind: NotificationChannel['kind']): NotificationChannel => ({
  delaySeconds: 0,
  id: kind,
  kind,
  person: null,
  reasons: null,
  url: kind === 'desktop' ? null : 'https://receiver.example/hook',
});

describe('messageFor', () => {
  it('keeps a Slack message within its 50 blocks, counting the rest, and escapes what an agent wrote', () => {
    const items = Array.from({ length: 60 }, (_, k) => item(k, k === 0 ? '<!channel> & <https://evil|click>' : 'x'));
    const message = messageFor(channel('slack'), { id: 'dlv_1', items }, null, 0);
    if (message.kind !== 'http') {
      throw new Error('an HTTP message');
    }
    const body = JSON.parse(message.body) as { blocks: Array<{ text: { text: string } }>; text: string };
    expect(body.blocks).toHaveLength(46);
    expect(body.blocks[45].text.text).toBe('…and 15 more');
    expect(body.blocks[0].text.text).toContain('&lt;!channel&gt; &amp; &lt;https://evil|click&gt;');
    expect(body.text).not.toContain('<!channel>');
  });

  it('signs a webhook over "<timestamp>.<body>" only with a secret', () => {
    const signed = messageFor(
      channel('webhook'),
      { id: 'dlv_2', items: [item(1)] },
      'secret-of-sixteen',
      1_700_000_000,
    );
    const unsigned = messageFor(channel('webhook'), { id: 'dlv_2', items: [item(1)] }, null, 1_700_000_000);
    if (signed.kind !== 'http' || unsigned.kind !== 'http') {
      throw new Error('HTTP messages');
    }
    expect(signed.headers['x-agent-manager-signature']).toBe(
      `sha256=${signature('secret-of-sixteen', 1_700_000_000, signed.body)}`,
    );
    expect(unsigned.headers['x-agent-manager-signature']).toBeUndefined();
    expect(JSON.parse(signed.body)).toMatchObject({
      id: 'dlv_2',
      reason: 'waiting_reply',
      requirement: { id: 'req_1' },
    });
  });

  it('gives ntfy a Latin-1 title (an RFC 2047 word otherwise) without line breaks, and the highest priority of its items', () => {
    const message = messageFor(
      channel('ntfy'),
      { id: 'dlv_3', items: [item(1), { ...item(2), reason: 'confirm_done' }] },
      null,
      0,
    );
    if (message.kind !== 'http') {
      throw new Error('an HTTP message');
    }
    expect(message.headers).toMatchObject({ Click: item(1).link, Priority: '4', Title: 'Needs you: 2 items' });
    const one = messageFor(
      channel('ntfy'),
      { id: 'dlv_4', items: [{ ...item(3), requirement: { id: 'r', title: '修复\r\nX' } }] },
      null,
      0,
    );
    if (one.kind !== 'http') {
      throw new Error('an HTTP message');
    }
    expect(one.headers.Title).toMatch(/^=\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=$/);
    expect(Buffer.from(one.headers.Title.slice(10, -2), 'base64').toString('utf8')).toBe(
      'Needs you: Asks you — 修复 X',
    );
  });
});
