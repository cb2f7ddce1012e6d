const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * A fetch for Octokit bounded by `timeoutMs` for the whole exchange: the body is read before the
 * timer stops, so a server that sends headers and then stalls is cut off too.
 */
export function fetchWithTimeout(timeoutMs: number): typeof fetch {
  return async (url: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    try {
      const response = await fetch(url, { ...init, signal: controller.signal });
      const body = NULL_BODY_STATUSES.has(response.status) ? null : await response.arrayBuffer();
      return new Response(body, {
        headers: response.headers,
        status: response.status,
        statusText: response.statusText,
      });
    } catch (error) {
      if (controller.signal.aborted) {
        // Named AbortError so that @octokit/request rethrows it as is and plugin-retry, which only
        // re-sends Octokit RequestErrors, does not retry it. Built here rather than passing on
        // fetch's DOMException: under Jest that comes from another realm, fails `instanceof Error`
        // in @octokit/request and would be wrapped into a retryable RequestError.
        throw Object.assign(new Error(`no answer within ${timeoutMs} ms`), { name: 'AbortError' });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
}
