// The typed API client. `schema.d.ts` is generated from openapi.json (`npm run client:generate`)
// and committed; a test fails when either is out of date with the server.
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';

import type { components, paths } from './schema';

export type { components, paths };
export type Schemas = components['schemas'];
export type ApiClient = Client<paths>;

export interface ApiClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** Sent as `Authorization: Bearer …` when set (the dashboard relies on its cookie instead). */
  token?: string;
}

/** A client for the server at `origin` (e.g. `http://127.0.0.1:4310`); paths include `/api`. */
export function createApiClient(origin: string, options: ApiClientOptions = {}): ApiClient {
  const { token, headers, ...rest } = options;
  return createClient<paths>({
    ...rest,
    baseUrl: origin.replace(/\/+$/, ''),
    headers: {
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...(headers as Record<string, string> | undefined),
    },
  });
}
