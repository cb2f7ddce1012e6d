import type { Logger } from '@nestjs/common';
import { Client } from 'pg';

import { type PostgresStore, pgClientConfig } from '../store';
import { boardChannel } from './postgres-board';

const RECONNECT_MS = 1000;

/**
 * Team mode: a session that LISTENs on the board's channel (the commits of every runner NOTIFY
 * it with their last event id, see PostgresGroupCommit), reconnecting after a loss. `onNotice`
 * gets each notification's id; `onListening` is called each time listening (re)starts, since
 * whatever committed while no one listened is known only by reading the table.
 */
export class BoardListener {
  private client: Client | undefined;
  private reconnect: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly store: PostgresStore,
    private readonly logger: Logger,
    private readonly onNotice: (lastEventId: number) => void,
    private readonly onListening: () => void,
  ) {}

  async start(): Promise<void> {
    const client = new Client(pgClientConfig(this.store, 'agent-manager events'));
    client.on('notification', (message) => this.onNotice(Number(message.payload)));
    client.on('error', (err) => {
      this.logger.warn({
        error: err.message,
        msg: "the board's event notifications were lost; reconnecting (the poll reads meanwhile)",
      });
      if (this.client === client) {
        this.client = undefined;
        void client.end().catch(() => undefined);
        this.scheduleReconnect();
      }
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${boardChannel(this.store.schema)}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      this.logger.warn({
        error: (err as Error).message,
        msg: "could not listen for the board's events; retrying (the poll reads meanwhile)",
      });
      this.scheduleReconnect();
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.onListening();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnect);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private scheduleReconnect(): void {
    if (this.stopped) {
      return;
    }
    clearTimeout(this.reconnect);
    this.reconnect = setTimeout(() => void this.start(), RECONNECT_MS);
    this.reconnect.unref();
  }
}
