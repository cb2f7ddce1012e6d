import createClient, {
  type ClientPathsWithMethod,
  type FetchResponse,
  type MaybeOptionalInit,
  type Middleware,
} from 'openapi-fetch';

import type { ApiClient, Schemas, paths } from '@libs/api-client';

import { authHeaders } from './http';

/**
 * The suites' way to call the API: the generated client (`libs/api-client`, typed from the OpenAPI
 * document), answering as `send` did — the status, the headers and the parsed body — so a
 * test can assert a refusal as easily as a success. Paths, parameters, request bodies and answers
 * come from the generated `paths`: a DTO that changes breaks the suites that use it at compile
 * time, not at run time. Requests the typed client cannot express on purpose (malformed bodies,
 * wrong content types, odd headers, undocumented routes) keep using `sendUntyped` from
 * `./http`.
 *
 *   const created = await ok(manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'x' } }), 201);
 *   const refused = await manager.api.POST('/api/requirements/{id}/start', { params: { path: { id } }, body: {} });
 *   expect(refused.status).toBe(409);
 *   expect(refused.error?.code).toBe('run_active');
 */

/** The server's error body (`{ statusCode, code, message }`; the global exception filter sends it for every error). */
export type ErrorBody = Schemas['ErrorBody'];

/** One answer. Nothing throws on an HTTP status: refusals are answers the suites assert. */
export interface Answer<Data> {
  status: number;
  /** The documented success body (2xx), or undefined. */
  data: Data | undefined;
  /**
   * The error body (non-2xx). Typed as the server's ErrorBody whatever the operation documents:
   * several controller-declared 404/409 answers list no body in the OpenAPI document although
   * the exception filter always sends one.
   */
  error: ErrorBody | undefined;
  headers: Headers;
  response: Response;
  /** `METHOD /path?query`, for messages. */
  request: string;
}

type Methods = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Media = `${string}/${string}`;
/** openapi-fetch's own rule: the init argument is optional when nothing in it is required. */
type InitArgs<Init> = [keyof { [K in keyof Init as object extends Pick<Init, K> ? never : K]: K }] extends [never]
  ? [Init?]
  : [Init];
type DataOf<P extends keyof paths, M extends Methods, Init> =
  NonNullable<paths[P][M]> extends infer O extends Record<string | number, unknown>
    ? FetchResponse<O, Init, Media>['data']
    : never;

type InitOf<P extends keyof paths, M extends Methods> = MaybeOptionalInit<paths[P], M>;

/**
 * The init is not a type parameter (as it is in openapi-fetch) so that an object literal gets
 * excess-property checks: a misspelt or renamed body field fails to compile even when optional.
 * The second overload reads a body as text (`parseAs: 'text'`: a download, a page).
 */
interface TypedMethod<M extends Methods> {
  <P extends ClientPathsWithMethod<ApiClient, M>>(
    path: P,
    ...init: InitArgs<InitOf<P, M>>
  ): Promise<Answer<DataOf<P, M, object>>>;
  <P extends ClientPathsWithMethod<ApiClient, M>>(
    path: P,
    init: InitOf<P, M> & { parseAs: 'text' },
  ): Promise<Answer<string>>;
}

export interface TypedApi {
  readonly origin: string;
  GET: TypedMethod<'get'>;
  POST: TypedMethod<'post'>;
  PUT: TypedMethod<'put'>;
  PATCH: TypedMethod<'patch'>;
  DELETE: TypedMethod<'delete'>;
}

export interface ApiOptions {
  /**
   * Default credentials: `true` (the default) sends the token registered for the origin by
   * `startManager` (as `send` does); a string sends that bearer token (a run credential);
   * `false` sends none. A request that brings its own `Authorization` or `Cookie` header keeps it.
   */
  auth?: boolean | string;
  /** Headers on every request (an `Origin`, a `Cookie`). */
  headers?: Record<string, string>;
}

/** Bytes and text go as they are (an attachment upload); everything else as JSON. */
function serializeBody(body: unknown): string | Uint8Array {
  if (typeof body === 'string' || body instanceof Uint8Array) {
    return body;
  }
  return JSON.stringify(body);
}

export function apiClient(origin: string, { auth = true, headers = {} }: ApiOptions = {}): TypedApi {
  const client = createClient<paths>({
    baseUrl: origin.replace(/\/+$/, ''),
    bodySerializer: serializeBody,
    headers,
    // As with `send`, a redirect is an answer to assert, not something to follow.
    redirect: 'manual',
  });
  const credentials: Middleware = {
    onRequest: ({ request }) => {
      const own = Object.fromEntries(request.headers.entries());
      const added = typeof auth === 'string' ? authHeadersFor(own, auth) : authHeaders(request.url, own, auth);
      for (const [name, value] of Object.entries(added)) {
        request.headers.set(name, value);
      }
    },
  };
  client.use(credentials);
  type Untyped = (path: string, init: unknown) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
  const call =
    (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE') =>
    async (path: string, init: Record<string, unknown> = {}): Promise<Answer<unknown>> => {
      // Bytes go as bytes (openapi-fetch would label them JSON).
      const bytes = typeof init.body === 'string' || init.body instanceof Uint8Array;
      const sent = bytes
        ? {
            ...init,
            headers: {
              'Content-Type': 'application/octet-stream',
              ...(init.headers as Record<string, string> | undefined),
            },
          }
        : init;
      // Read as text and parse JSON only when the answer says it is JSON: a text/plain answer (a
      // diff) is then its text, as the document types it, instead of a parse error.
      const asText = init.parseAs === undefined;
      const { data, error, response } = await (client[method] as Untyped)(
        path,
        asText ? { ...sent, parseAs: 'text' } : sent,
      );
      const url = new URL(response.url || `${origin}${path}`);
      return {
        data: response.ok ? (asText ? parseJson(data, response) : data) : undefined,
        error: response.ok ? undefined : (error as ErrorBody | undefined),
        headers: response.headers,
        request: `${method} ${url.pathname}${url.search}`,
        response,
        status: response.status,
      };
    };
  return {
    DELETE: call('DELETE') as TypedMethod<'delete'>,
    GET: call('GET') as TypedMethod<'get'>,
    origin,
    PATCH: call('PATCH') as TypedMethod<'patch'>,
    POST: call('POST') as TypedMethod<'post'>,
    PUT: call('PUT') as TypedMethod<'put'>,
  };
}

function parseJson(text: unknown, response: Response): unknown {
  if (typeof text !== 'string' || text === '' || !/\bjson\b/.test(response.headers.get('content-type') ?? '')) {
    return text;
  }
  return JSON.parse(text) as unknown;
}

function authHeadersFor(own: Record<string, string>, token: string): Record<string, string> {
  return 'authorization' in own || 'cookie' in own ? {} : { Authorization: `Bearer ${token}` };
}

/**
 * The answer's body, after asserting it succeeded (with `status` when given). A failure names the
 * request, the status and the error body, so the test's message says what the server refused.
 */
export async function ok<Data>(
  answer: Answer<Data> | Promise<Answer<Data>>,
  status?: number,
): Promise<NonNullable<Data>> {
  const a = await answer;
  const good = status === undefined ? a.status >= 200 && a.status < 300 : a.status === status;
  if (!good) {
    throw new Error(
      `${a.request} answered ${a.status}${status === undefined ? '' : ` (expected ${status})`}: ${JSON.stringify(a.error ?? a.data)}`,
    );
  }
  return a.data as NonNullable<Data>;
}

/** The error body, after asserting the answer is this refusal (and this `code` when given). */
export async function refusal<Data>(
  answer: Answer<Data> | Promise<Answer<Data>>,
  status: number,
  code?: string,
): Promise<ErrorBody> {
  const a = await answer;
  if (a.status !== status || (code !== undefined && a.error?.code !== code)) {
    throw new Error(
      `${a.request} answered ${a.status}${a.error ? ` ${a.error.code}` : ''} (expected ${status}${code ? ` ${code}` : ''}): ${JSON.stringify(a.error ?? a.data)}`,
    );
  }
  return a.error as ErrorBody;
}

/**
 * Uploads an attachment through the typed route. The document types an octet-stream body as a
 * string (openapi-typescript's mapping of `format: binary`); bytes are what goes on the wire.
 */
export function upload(
  api: TypedApi,
  requirementId: string,
  fileName: string,
  content: string | Buffer,
): Promise<Answer<Schemas['AttachmentResponseDto'] | undefined>> {
  return api.POST('/api/requirements/{id}/attachments', {
    body: content as string,
    params: { header: { 'X-File-Name': fileName }, path: { id: requirementId } },
  });
}
