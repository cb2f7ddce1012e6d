/** The part of node-postgres (`pg`, TypeORM's PostgreSQL driver) this code calls; pg ships no types. */
declare module 'pg' {
  import type { TlsOptions } from 'node:tls';

  export interface ClientConfig {
    connectionString?: string;
    ssl?: boolean | TlsOptions;
    statement_timeout?: number;
    options?: string;
    application_name?: string;
    connectionTimeoutMillis?: number;
  }

  export interface QueryResult<R> {
    rows: R[];
    rowCount: number | null;
  }

  export class Client {
    constructor(config?: ClientConfig);
    connect(): Promise<void>;
    query<R = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>>;
    end(): Promise<void>;
    on(event: 'error', listener: (err: Error) => void): this;
    /** A NOTIFY on a channel this session LISTENs to. */
    on(
      event: 'notification',
      listener: (message: { channel: string; payload?: string; processId: number }) => void,
    ): this;
  }

  export const types: { setTypeParser(oid: number, parse: (value: string) => unknown): void };
}
