import type { CatalogModel } from '@libs/contracts';

import { CLAUDE_CODE_EFFORTS } from './known-models';

export interface AnthropicListingOptions {
  /** The environment Claude Code runs with: where it sends requests and with which credential. */
  env: Record<string, string>;
  timeoutMs: number;
  /** Aborted when the manager shuts down. */
  signal?: AbortSignal;
}

const DEFAULT_BASE_URL = 'https://api.anthropic.com';
const MAX_PAGES = 10;

/**
 * The models the Anthropic API lists (`GET /v1/models?limit=1000`, the request Claude Code makes
 * for its gateway model discovery), asked with the credential and base URL Claude Code gets
 * (ANTHROPIC_API_KEY as `x-api-key`, or ANTHROPIC_AUTH_TOKEN as a Bearer token;
 * ANTHROPIC_BASE_URL). Null when that environment has no credential: a subscription login
 * lives in Claude Code's own keychain, and then only the aliases are offered.
 */
export async function listAnthropicModels(options: AnthropicListingOptions): Promise<CatalogModel[] | null> {
  const { env } = options;
  const headers: Record<string, string> = { 'anthropic-version': '2023-06-01' };
  if (env.ANTHROPIC_API_KEY) {
    headers['x-api-key'] = env.ANTHROPIC_API_KEY;
  } else if (env.ANTHROPIC_AUTH_TOKEN) {
    headers.authorization = `Bearer ${env.ANTHROPIC_AUTH_TOKEN}`;
  } else {
    return null;
  }
  const base = (env.ANTHROPIC_BASE_URL || DEFAULT_BASE_URL).replace(/\/+$/, '');
  const models: CatalogModel[] = [];
  let after: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const url = new URL(`${base}/v1/models`);
    url.searchParams.set('limit', '1000');
    if (after !== null) {
      url.searchParams.set('after_id', after);
    }
    let response: Response;
    try {
      const timeout = AbortSignal.timeout(options.timeoutMs);
      response = await fetch(url, {
        headers,
        signal: options.signal ? AbortSignal.any([timeout, options.signal]) : timeout,
      });
    } catch (error) {
      throw new Error(`GET ${url.origin}/v1/models failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    const text = await response.text();
    if (!response.ok) {
      throw new Error(`GET ${url.origin}/v1/models answered ${response.status}: ${apiMessage(text)}`);
    }
    let body: { data?: unknown; has_more?: unknown; last_id?: unknown };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      throw new Error(`GET ${url.origin}/v1/models answered something that is not JSON`);
    }
    const data = Array.isArray(body.data) ? (body.data as { id?: unknown; display_name?: unknown }[]) : [];
    for (const model of data) {
      if (typeof model.id === 'string' && model.id !== '') {
        const label =
          typeof model.display_name === 'string' && model.display_name !== '' ? model.display_name : model.id;
        models.push({
          efforts: [...CLAUDE_CODE_EFFORTS],
          id: model.id,
          label,
          provider: 'claude-code',
          source: 'anthropic_api',
        });
      }
    }
    if (body.has_more !== true || typeof body.last_id !== 'string') {
      break;
    }
    after = body.last_id;
  }
  return models;
}

/** The API's `{error: {message}}`, or the start of whatever it answered. */
function apiMessage(text: string): string {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === 'string') {
      return message.slice(0, 300);
    }
  } catch {
    // not JSON
  }
  return text.slice(0, 300) || '(empty body)';
}
