import { Injectable } from '@nestjs/common';

import { ApiClient, createApiClient } from '@libs/api-client';

import { AgentContext, readAgentContext } from './agent-context';

/** A refusal or failure, printed as one line by the CLI runner. */
export class ManagerApiError extends Error {
  constructor(
    message: string,
    /** What the manager answered, when it did: its status and error code. */
    readonly answer: { status: number; code: string | null } | null = null,
  ) {
    super(message);
  }
}

export type Outcome<T> = { data?: T; error?: unknown; response: Response };

/**
 * The CLI's way to the manager: the generated typed client with the run's credential, a
 * timeout on every call, and every failure turned into one readable line.
 */
@Injectable()
export class ManagerApi {
  private cached: { context: AgentContext; client: ApiClient } | null = null;

  /**
   * One bound to a given run context instead of the environment's: the manager's own MCP endpoint
   * calls its agent API over loopback with the credential the request presented, so a tool goes
   * through exactly the authentication and scope checks of the command it mirrors.
   */
  static forContext(context: AgentContext): ManagerApi {
    const api = new ManagerApi();
    api.cached = { client: clientFor(context), context };
    return api;
  }

  /** The run's context (throws the missing-variable error on first use). */
  get context(): AgentContext {
    return this.connection().context;
  }

  get client(): ApiClient {
    return this.connection().client;
  }

  /** Performs one call: resolves with the body, or throws a ManagerApiError saying why. */
  async call<T>(what: string, request: (client: ApiClient, signal: AbortSignal) => Promise<Outcome<T>>): Promise<T> {
    const { context, client } = this.connection();
    return callManager(client, context, what, request);
  }

  private connection() {
    if (!this.cached) {
      const context = readAgentContext();
      this.cached = { client: clientFor(context), context };
    }
    return this.cached;
  }
}

function clientFor(context: AgentContext): ApiClient {
  return createApiClient(context.apiUrl.replace(/\/api$/, ''), { token: context.token ?? undefined });
}

/**
 * One call through the typed client with a timeout: the body, or a ManagerApiError saying why
 * (`<what> refused (<status> <code>): <server's message>`, or that the manager cannot be reached).
 */
export async function callManager<T>(
  client: ApiClient,
  context: Pick<AgentContext, 'apiUrl' | 'timeoutMs'>,
  what: string,
  request: (client: ApiClient, signal: AbortSignal) => Promise<Outcome<T>>,
): Promise<T> {
  let outcome: Outcome<T>;
  try {
    outcome = await request(client, AbortSignal.timeout(context.timeoutMs));
  } catch (err) {
    throw new ManagerApiError(`${what}: ${describeFailure(err, context)}`);
  }
  if (outcome.error !== undefined || !outcome.response.ok) {
    const body = (outcome.error ?? {}) as { message?: unknown; code?: unknown };
    const message = Array.isArray(body.message)
      ? body.message.join('; ')
      : typeof body.message === 'string'
        ? body.message
        : outcome.response.statusText;
    const code = typeof body.code === 'string' ? body.code : null;
    throw new ManagerApiError(`${what} refused (${outcome.response.status}${code ? ` ${code}` : ''}): ${message}`, {
      code,
      status: outcome.response.status,
    });
  }
  return outcome.data as T;
}

function describeFailure(err: unknown, context: Pick<AgentContext, 'apiUrl' | 'timeoutMs'>): string {
  const error = err as Error & { cause?: { code?: string; message?: string } };
  if (error.name === 'TimeoutError' || error.name === 'AbortError') {
    return `no answer from Agent Manager at ${context.apiUrl} within ${context.timeoutMs / 1000} s`;
  }
  const cause = error.cause?.code ?? error.cause?.message ?? error.message;
  return `cannot reach Agent Manager at ${context.apiUrl} (${cause}); is it still running?`;
}

/** The one output format: the server's JSON answer, indented, on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
