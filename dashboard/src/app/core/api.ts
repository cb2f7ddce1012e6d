import { Injectable, inject } from '@angular/core';
import { createApiClient } from '@libs/api-client';

import { LoginState } from './login-state';
import { Notifier } from './notifier';

/** A failed call: the server's `{statusCode, code, message, details}` when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | null,
    message: string,
    /** What the refusal is about, when it names things (a land's conflicting files). */
    readonly details: readonly string[] = [],
  ) {
    super(message);
  }
}

interface ErrorBody {
  code?: string;
  message?: string | string[];
  details?: unknown;
}

const PAGE = 200;

/**
 * The generated client on this origin (the login cookie rides along). Every failure goes through
 * one place that turns it into a notification, so components don't repeat error UI.
 */
@Injectable({ providedIn: 'root' })
export class Api {
  readonly client = createApiClient(location.origin);
  private readonly notifier = inject(Notifier);
  private readonly login = inject(LoginState);

  /**
   * Unwraps an openapi-fetch result: the data, or an ApiError (also shown to the person unless
   * `quiet`, e.g. for a probe of an endpoint that may not exist yet).
   */
  async call<T>(request: Promise<{ data?: T; error?: unknown; response: Response }>, quiet = false): Promise<T> {
    let result: { data?: T; error?: unknown; response: Response };
    try {
      result = await request;
    } catch (cause) {
      throw this.fail(new ApiError(0, 'network', cause instanceof Error ? cause.message : String(cause)), quiet);
    }
    if (!result.response.ok) {
      const body = (result.error ?? {}) as ErrorBody;
      const message = Array.isArray(body.message)
        ? body.message.join('; ')
        : (body.message ?? result.response.statusText);
      const details = Array.isArray(body.details) ? body.details.map(String) : [];
      throw this.fail(new ApiError(result.response.status, body.code ?? null, message, details), quiet);
    }
    return result.data as T;
  }

  /** Every page of a cursor-paginated list, each handed to `onPage` as it arrives. */
  async all<T>(
    page: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | null }>,
    onPage?: (items: T[]) => void,
  ): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | undefined;
    for (;;) {
      const { items, nextCursor } = await page(cursor);
      out.push(...items);
      onPage?.(items);
      if (!nextCursor || items.length === 0) {
        return out;
      }
      cursor = nextCursor;
    }
  }

  readonly pageSize = PAGE;

  private fail(error: ApiError, quiet: boolean): ApiError {
    if (error.status === 401) {
      // No login cookie: the logged-out page says how to log in; a toast per call would not.
      this.login.markLoggedOut(error.code);
      return error;
    }
    if (!quiet) {
      const { headline, rest } = inWords(error.message);
      const status = error.status ? `HTTP ${error.status}${error.code ? ` · ${error.code}` : ''}` : '';
      this.notifier.error(headline, [rest, ...error.details, status].filter((part) => part !== '').join('\n'));
    }
    return error;
  }
}

/**
 * What a refusal says, for a person: its first line as the toast (no status code in front), and
 * the rest — once each: a provider's JSON repeated by every layer it passed through — behind a
 * toggle with the status (issue 47 §2).
 */
export function inWords(message: string): { headline: string; rest: string } {
  const lines = message
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const seen = new Set<string>();
  const unique = lines.filter((line) => !seen.has(line) && seen.add(line));
  const [first = message.trim(), ...more] = unique;
  const headline = first.length > 200 ? `${first.slice(0, 199)}…` : first;
  return { headline, rest: [first.length > 200 ? first : '', ...more].filter((l) => l !== '').join('\n') };
}
