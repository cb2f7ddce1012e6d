import { createHmac } from 'node:crypto';

import type { Schemas } from '@libs/api-client';
import type { RunningManager } from '@server/manager';

import { apiClient, ok } from './support/api';
import { WORKTREE_AGENT, createRequirement, initRepository, say, settled, sh, startRun } from './support/git-repo';
import { sendUntyped } from './support/http';
import { startWorktreeManager } from './support/in-process';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { NotificationReceiver, Received } from './support/notification-receiver';
import { until } from './support/wait';

type Channel = Schemas['NotificationChannelDto'];
type Delivery = Schemas['NotificationDeliveryDto'];

const SECRET = 'a-webhook-secret-for-the-test';

jest.setTimeout(120_000);

// Issue 47 §3: Needs-you items sent outside the browser — a signed webhook, Slack and ntfy bodies
// in their documented shapes, one delivery per item through a receiver's outage (the same id on
// every retry), twenty items in ten seconds as at most two messages, a delayed channel that sends
// only what is still open, and bad channels refused naming the field. A real in-process server, a
// real SQLite file, the synthetic agent as a real child process, a real local HTTP receiver.
describe('notifications outside the browser', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  let receiver: NotificationReceiver;
  const api = () => apiClient(manager.url);
  const withApi = () => ({ api: api() });
  const channels = (list: Array<Partial<Channel> & Pick<Channel, 'id' | 'kind'>>) =>
    ok(api().PATCH('/api/configuration', { body: { notificationChannels: list as Channel[] } }));
  const deliveries = async (channel?: string): Promise<Delivery[]> =>
    (await ok(api().GET('/api/notifications/deliveries', { params: { query: { channel, limit: 500 } } }))).items;
  const json = (r: Received) => JSON.parse(r.body) as Record<string, unknown>;
  const itemIdsOf = (received: Received[]) =>
    received.flatMap((r) => (json(r).items as Array<{ id: string }>).map((i) => i.id));

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n' });
    receiver = await NotificationReceiver.start();
    manager = await startWorktreeManager(sandbox);
    await ok(api().PATCH('/api/configuration', { body: { notificationWebhookSecret: SECRET } }));
  });

  afterAll(async () => {
    await manager?.stop();
    await receiver?.close();
    sandbox?.cleanup();
  });

  it('sends a question to a signed webhook, Slack and ntfy, each in its documented shape', async () => {
    await channels([
      { id: 'hook', kind: 'webhook', url: `${receiver.url}/hook` },
      { id: 'slack', kind: 'slack', reasons: ['waiting_reply'], url: `${receiver.url}/slack` },
      { id: 'phone', kind: 'ntfy', url: `${receiver.url}/ntfy/agents` },
    ]);
    const configuration = await ok(api().GET('/api/configuration'));
    expect(configuration.values.notificationWebhookSecret).toBeNull();
    expect(configuration.notificationWebhookSecretConfigured).toBe(true);

    const { id } = await createRequirement(withApi(), { title: 'Picks a port' });
    await startRun(withApi(), id, say('Which port should the server use?'));
    await settled(withApi(), id, 1);
    await until('all three received', async () =>
      receiver.on('/hook').length > 0 && receiver.on('/slack').length > 0 && receiver.on('/ntfy/agents').length > 0
        ? true
        : undefined,
    );
    const [item] = (await ok(api().GET('/api/attention'))).items.filter((i) => i.requirementId === id);

    // The webhook: JSON, signed over "<timestamp>.<body>" with the secret, its delivery id in a header.
    const [hook] = receiver.on('/hook');
    const timestamp = String(hook.headers['x-agent-manager-timestamp']);
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(60);
    expect(hook.headers['x-agent-manager-signature']).toBe(
      `sha256=${createHmac('sha256', SECRET).update(`${timestamp}.${hook.body}`).digest('hex')}`,
    );
    const body = json(hook);
    expect(body).toMatchObject({
      id: hook.headers['x-agent-manager-delivery'],
      link: `${manager.url}/requirements/${id}`,
      reason: 'waiting_reply',
      requirement: { id, title: 'Picks a port' },
      since: item.since,
      summary: 'Which port should the server use?',
    });
    expect(String(body.id)).toMatch(/^dlv_/);

    // Slack's incoming webhook: text for the notification, a section with a button to the card.
    const slack = json(receiver.on('/slack')[0]);
    expect(slack.text).toBe('Asks you — Picks a port: Which port should the server use?');
    expect(slack.blocks).toEqual([
      {
        accessory: {
          text: { text: 'Open', type: 'plain_text' },
          type: 'button',
          url: `${manager.url}/requirements/${id}`,
        },
        text: { text: '*Asks you* — Picks a port\nWhich port should the server use?', type: 'mrkdwn' },
        type: 'section',
      },
    ]);

    // ntfy: a publish to the topic URL, the message in the body, title, click link and priority in headers.
    const [ntfy] = receiver.on('/ntfy/agents');
    expect(ntfy.body).toBe('Asks you — Picks a port: Which port should the server use?');
    expect(ntfy.headers).toMatchObject({ click: `${manager.url}/requirements/${id}`, priority: '4' });
    // A header is Latin-1: the title (an em dash, any Requirement's own script) is an RFC 2047 word, as ntfy reads it.
    const word = /^=\?UTF-8\?B\?([A-Za-z0-9+/=]+)\?=$/.exec(String(ntfy.headers.title));
    expect(Buffer.from(word?.[1] ?? '', 'base64').toString('utf8')).toBe('Needs you: Asks you — Picks a port');

    const sent = await deliveries('hook');
    expect(sent[0]).toMatchObject({
      attempts: 1,
      channelId: 'hook',
      kind: 'webhook',
      lastError: null,
      status: 'delivered',
    });
    expect(sent[0].items.map((i) => i.id)).toEqual([item.id]);
  });

  it('retries a receiver that fails under the same delivery id, once delivered never again, and shows the failures', async () => {
    await channels([{ id: 'flaky', kind: 'webhook', reasons: ['run_failed'], url: `${receiver.url}/flaky` }]);
    receiver.fail('/flaky', 2);
    const { id } = await createRequirement(withApi(), { title: 'Fails once' });
    await startRun(withApi(), id, sh('exit 3'));
    await settled(withApi(), id, 1);
    const failing = await until('a failed attempt listed', async () => {
      const [d] = await deliveries('flaky');
      return d && d.attempts >= 1 && d.status === 'pending' ? d : undefined;
    });
    expect(failing.lastError).toBe('the receiver answered 500');
    expect(failing.nextAttemptAt).not.toBeNull();
    const done = await until(
      'delivered after the outage',
      async () => {
        const [d] = await deliveries('flaky');
        return d?.status === 'delivered' ? d : undefined;
      },
      30_000,
    );
    expect(done.attempts).toBe(3);
    const got = receiver.on('/flaky');
    expect(got).toHaveLength(3);
    expect(new Set(got.map((r) => r.headers['x-agent-manager-delivery']))).toEqual(new Set([done.id]));
    expect(await deliveries('flaky')).toHaveLength(1);
  });

  it('sends twenty items opened within ten seconds as at most two messages, each item once', async () => {
    await channels([{ id: 'burst', kind: 'webhook', reasons: ['dependency_cancelled'], url: `${receiver.url}/burst` }]);
    const first = await createRequirement(withApi(), { title: 'Goes first' });
    const waiting = [];
    for (let k = 0; k < 20; k++) {
      waiting.push(
        await createRequirement(withApi(), {
          dependsOn: [{ requirementId: first.id, until: 'done' }],
          title: `Waits ${k}`,
        }),
      );
    }
    await ok(api().POST('/api/requirements/{id}/cancel', { params: { path: { id: first.id } } }));
    await until(
      'twenty items delivered',
      async () => (itemIdsOf(receiver.on('/burst')).length >= 20 ? true : undefined),
      30_000,
    );
    const messages = receiver.on('/burst');
    expect(messages.length).toBeLessThanOrEqual(2);
    const ids = itemIdsOf(messages);
    expect(new Set(ids).size).toBe(20);
    expect(ids).toHaveLength(20);
    const items = (await ok(api().GET('/api/attention'))).items.filter((i) => i.reason === 'dependency_cancelled');
    expect(new Set(ids)).toEqual(new Set(items.map((i) => i.id)));
  });

  it('with delaySeconds sends only what is still open after that long', async () => {
    await channels([
      {
        delaySeconds: 2,
        id: 'later',
        kind: 'webhook',
        reasons: ['dependency_cancelled'],
        url: `${receiver.url}/later`,
      },
    ]);
    const gone = await createRequirement(withApi(), { title: 'Cancelled soon' });
    const stays = await createRequirement(withApi(), {
      dependsOn: [{ requirementId: gone.id, until: 'done' }],
      title: 'Stays blocked',
    });
    const cleared = await createRequirement(withApi(), {
      dependsOn: [{ requirementId: gone.id, until: 'done' }],
      title: 'Unblocked at once',
    });
    await ok(api().POST('/api/requirements/{id}/cancel', { params: { path: { id: gone.id } } }));
    await until('both opened', async () => {
      const open = (await ok(api().GET('/api/attention'))).items.filter((i) => i.reason === 'dependency_cancelled');
      return [stays.id, cleared.id].every((id) => open.some((i) => i.requirementId === id)) ? true : undefined;
    });
    await ok(
      api().PUT('/api/requirements/{id}/dependencies', {
        body: { dependsOn: [] },
        params: { path: { id: cleared.id } },
      }),
    );
    await until('the delayed one sent', async () => (receiver.on('/later').length > 0 ? true : undefined), 20_000);
    const sent = receiver
      .on('/later')
      .flatMap((r) => (json(r).items as Array<{ requirement: { id: string } }>).map((i) => i.requirement.id));
    expect(sent).toEqual([stays.id]);
  });

  it('tests a channel on demand, and refuses a bad channel naming the field, changing nothing', async () => {
    await channels([{ id: 'hook', kind: 'webhook', url: `${receiver.url}/test-hook` }]);
    const tested = await ok(api().POST('/api/notifications/channels/{id}/test', { params: { path: { id: 'hook' } } }));
    expect(tested).toMatchObject({ attempts: 1, channelId: 'hook', status: 'delivered' });
    expect(receiver.on('/test-hook')).toHaveLength(1);
    const missing = await api().POST('/api/notifications/channels/{id}/test', { params: { path: { id: 'nope' } } });
    expect(missing.status).toBe(404);

    // A channel's URL is a secret past its host (an ntfy topic, a Slack hook): the API shows it cut,
    // and the list saved back as shown keeps the real URL (the test message still arrives).
    const shown = await ok(api().GET('/api/configuration'));
    const origin = new URL(receiver.url).origin;
    expect(shown.values.notificationChannels).toEqual([expect.objectContaining({ id: 'hook', url: `${origin}/…` })]);
    expect(JSON.stringify(shown)).not.toContain('/test-hook');
    await ok(
      api().PATCH('/api/configuration', {
        body: {
          notificationChannels: [
            ...shown.values.notificationChannels,
            { delaySeconds: 0, id: 'more', kind: 'desktop', person: null, reasons: null, url: null },
          ],
        },
      }),
    );
    await ok(api().POST('/api/notifications/channels/{id}/test', { params: { path: { id: 'hook' } } }));
    expect(receiver.on('/test-hook')).toHaveLength(2);
    // Renamed (or copied) with its URL as shown: nothing to restore it from, so it is refused.
    const renamed = await sendUntyped(manager.url, 'PATCH', '/api/configuration', {
      notificationChannels: [{ ...shown.values.notificationChannels[0], id: 'renamed' }],
    });
    expect(renamed.status).toBe(400);
    expect(renamed.json.message).toContain('notificationChannels[0].url');
    await channels([{ id: 'hook', kind: 'webhook', url: `${receiver.url}/test-hook` }]);

    const before = (await ok(api().GET('/api/configuration'))).values.notificationChannels;
    for (const [channel, field] of [
      [{ id: 'x', kind: 'webhook', url: 'ftp://example.com/hook' }, 'notificationChannels[0].url'],
      [{ id: 'x', kind: 'pager', url: 'https://example.com' }, 'notificationChannels[0].kind'],
      [{ id: 'x', kind: 'slack', reasons: ['bored'], url: 'https://example.com' }, 'notificationChannels[0].reasons'],
      [
        { delaySeconds: 90_000, id: 'x', kind: 'ntfy', url: 'https://ntfy.sh/t' },
        'notificationChannels[0].delaySeconds',
      ],
      [{ id: 'x', kind: 'desktop', url: 'https://example.com' }, 'notificationChannels[0].url'],
      [{ id: 'has space', kind: 'desktop' }, 'notificationChannels[0].id'],
    ] as const) {
      const refused = await sendUntyped(manager.url, 'PATCH', '/api/configuration', {
        notificationChannels: [channel],
      });
      expect(refused.status).toBe(400);
      expect(refused.text).toContain(field);
    }
    expect((await ok(api().GET('/api/configuration'))).values.notificationChannels).toEqual(before);
    const badQuery = await sendUntyped(manager.url, 'GET', '/api/notifications/deliveries?limit=9999');
    expect(badQuery.status).toBe(400);
  });
});

describe('notifications across a crash', () => {
  it('sends an item once, under one delivery id, through a receiver outage and a kill -9 of the manager', async () => {
    const sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n' });
    const receiver = await NotificationReceiver.start();
    const env = { CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT, CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT };
    let manager: ManagerProcess | null = await startManager({ env, sandbox });
    try {
      receiver.fail('/k9', 1000);
      await ok(
        manager.api.PATCH('/api/configuration', {
          body: { notificationChannels: [{ id: 'k9', kind: 'webhook', url: `${receiver.url}/k9` } as Channel] },
        }),
      );
      const { id } = await createRequirement(manager, { title: 'Asks through a crash' });
      await startRun(manager, id, say('Ready to go on?'));
      const first = manager;
      await until('a failed attempt', async () => {
        const [d] = (await ok(first.api.GET('/api/notifications/deliveries'))).items;
        return d && d.attempts >= 1 ? d : undefined;
      });
      await manager.kill9();
      manager = null;
      receiver.fail('/k9', 0);
      manager = await startManager({ env, sandbox });
      const again = manager;
      const delivered = await until(
        'delivered after the restart',
        async () => {
          const [d] = (await ok(again.api.GET('/api/notifications/deliveries'))).items;
          return d?.status === 'delivered' ? d : undefined;
        },
        30_000,
      );
      const got = receiver.on('/k9');
      expect(new Set(got.map((r) => r.headers['x-agent-manager-delivery']))).toEqual(new Set([delivered.id]));
      expect((await ok(again.api.GET('/api/notifications/deliveries'))).items).toHaveLength(1);
    } finally {
      await manager?.stop();
      await receiver.close();
      sandbox.cleanup();
    }
  });
});
