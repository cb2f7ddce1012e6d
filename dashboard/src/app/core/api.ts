import { Injectable, inject } from '@angular/core';
import { createApiClient } from '@libs/api-client';

import type { CreateReviewRequest, CreateTimer, ReviewRequest, Timer } from './models';
import { Notifier } from './notifier';

/** A failed call: the server's `{statusCode, code, message}` when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | null,
    message: string,
  ) {
    super(message);
  }
}

interface ErrorBody {
  code?: string;
  message?: string | string[];
}

const PAGE = 200;

/**
 * The generated client on this origin (the login cookie rides along), plus a few typed wrappers
 * for endpoints that are in the contract but not yet in the generated client. Every failure goes
 * through one place that turns it into a notification, so components don't repeat error UI.
 */
@Injectable({ providedIn: 'root' })
export class Api {
  readonly client = createApiClient(location.origin);
  private readonly notifier = inject(Notifier);

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
      const message = Array.isArray(body.message) ? body.message.join('; ') : (body.message ?? result.response.statusText);
      throw this.fail(new ApiError(result.response.status, body.code ?? null, message), quiet);
    }
    return result.data as T;
  }

  /** Every page of a cursor-paginated list, or fewer if `keepGoing` says stop (newest-first lists). */
  async all<T>(page: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | null }>, keepGoing: (items: T[]) => boolean = () => true, onPage?: (items: T[]) => void): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | undefined;
    for (;;) {
      const { items, nextCursor } = await page(cursor);
      out.push(...items);
      onPage?.(items);
      if (!nextCursor || items.length === 0 || !keepGoing(items)) {
        return out;
      }
      cursor = nextCursor;
    }
  }

  readonly pageSize = PAGE;

  // --- Endpoints the generated client does not have yet (timers, review requests). -------------
  // They go through plain fetch with the same error handling; once `npm run client:generate`
  // includes them, each body becomes one `this.client.GET/POST/DELETE(...)` line.

  listTimers(requirementId?: string): Promise<{ items: Timer[] }> {
    const path = requirementId ? `/api/requirements/${encodeURIComponent(requirementId)}/timers?limit=${PAGE}` : `/api/timers?limit=${PAGE}`;
    return this.raw('GET', path, undefined, true);
  }

  createTimer(requirementId: string, body: CreateTimer): Promise<Timer> {
    return this.raw('POST', `/api/requirements/${encodeURIComponent(requirementId)}/timers`, body);
  }

  cancelTimer(requirementId: string, timerId: string): Promise<Timer> {
    return this.raw('DELETE', `/api/requirements/${encodeURIComponent(requirementId)}/timers/${encodeURIComponent(timerId)}`);
  }

  listReviewRequests(pullRequestId: string): Promise<{ items: ReviewRequest[] }> {
    return this.raw('GET', `/api/review-requests?pullRequestId=${encodeURIComponent(pullRequestId)}&limit=${PAGE}`, undefined, true);
  }

  requestReview(pullRequestId: string, body: CreateReviewRequest): Promise<{ reviewRequest: ReviewRequest }> {
    return this.raw('POST', `/api/pull-requests/${encodeURIComponent(pullRequestId)}/review-requests`, body);
  }

  private async raw<T>(method: string, path: string, body?: unknown, quiet = false): Promise<T> {
    const init: RequestInit = { headers: { Accept: 'application/json' }, method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { Accept: 'application/json', 'Content-Type': 'application/json' };
    }
    const response = await fetch(path, init).catch((cause: unknown) => {
      throw this.fail(new ApiError(0, 'network', String(cause)), quiet);
    });
    const text = await response.text();
    const json: unknown = text ? JSON.parse(text) : null;
    if (!response.ok) {
      const err = (json ?? {}) as ErrorBody;
      const message = Array.isArray(err.message) ? err.message.join('; ') : (err.message ?? response.statusText);
      throw this.fail(new ApiError(response.status, err.code ?? null, message), quiet);
    }
    return json as T;
  }

  private fail(error: ApiError, quiet: boolean): ApiError {
    if (!quiet) {
      this.notifier.error(error.status ? `${error.status} · ${error.message}` : error.message);
    }
    return error;
  }
}

/** True when the endpoint does not exist on this server yet (older build): treat as empty. */
export const isMissing = (error: unknown): boolean => error instanceof ApiError && error.status === 404;
