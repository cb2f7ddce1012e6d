// A scripted model server for end-to-end tests that drive the REAL agent CLIs.
//
// One HTTP server on 127.0.0.1 (ephemeral port) that speaks:
// - the OpenAI Responses API, streaming (`POST /v1/responses`) — Codex with a custom provider;
// - the Anthropic Messages API, streaming and non-streaming (`POST /v1/messages?beta=true`) — Claude Code;
// - the model lists (`GET /v1/models`): Codex's models endpoint (`{models: [ModelInfo]}`, asked by
//   `codex app-server` when its provider has a `model_catalog_url`) and the Anthropic API's
//   (`{data, has_more, first_id, last_id}`, asked by the manager's model catalog). See `models`.
//
// Each model request consumes one scripted turn, in order (`script`), or from the queue whose marker appears
// in the conversation's latest user prompt (`scriptFor`), so several concurrent agents can share one stub.
// With nothing scripted, the answer is the text "OK".
//
// The wire formats follow test/fixtures/agent-transcripts/README.md (sections b–d) and the captured
// `.meta.md` responses byte for byte in shape.
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import type { Json } from './http';

export type StubTurn =
  /** Assistant text, optionally preceded by a reasoning summary (Codex) / thinking block (Claude). */
  | { text: string; reasoning?: string }
  /**
   * Ask the agent to run a shell command (Codex: function_call `exec_command {cmd}`;
   * Claude: tool_use `Bash {command, description}`), optionally preceded by some text.
   */
  | { shell: string; text?: string }
  /**
   * Call the offered tool named `tool` with `arguments` (Codex: a `function_call`, inside its namespace when
   * the request offers the tool in one; Claude: a `tool_use` block). The name is looked up in the request's
   * `tools` first, so a tool that was not offered fails the request loudly instead of confusing the CLI.
   */
  | { tool: string; arguments: ToolArguments; text?: string }
  /**
   * An HTTP error answer. `times` (default 1) answers that many consecutive requests of the same queue with
   * the same error: Claude Code re-sends a request that got a 400 up to 5 times with fewer beta features, so a
   * 400 that should stick needs `times: 6` (or `Infinity`). A 500 with CLAUDE_CODE_MAX_RETRIES=0 is one request.
   *
   * `code` is the OpenAI `error.code` / the Anthropic `error.type`. Codex prints `message` only for error codes
   * it knows (e.g. `invalid_prompt`, `model_not_found`) and otherwise the whole JSON body, so the OpenAI default
   * is `invalid_prompt` for 4xx and `server_error` for 5xx (Codex shows its own generic text for 5xx anyway).
   */
  | { error: { status: number; message: string; code?: string }; times?: number }
  /** Wait before answering (nothing is sent meanwhile: no status line, no headers). */
  | { delayMs: number; then: StubTurn }
  /** Answer once `after` settles (a test's gate: "not before the PR head has moved"), however long that takes. */
  | { after: Promise<unknown>; then: StubTurn }
  /** Never answer; the connection stays open until the client goes away or the stub closes. */
  | { hang: true };

export type StubApi = 'openai' | 'anthropic';

/**
 * A tool call's arguments, or a function of the request that computes them: a suite can pass on what an
 * earlier tool returned (`request.transcript` ends with the latest `tool_result:` lines).
 */
export type ToolArguments = Record<string, unknown> | ((request: StubRequest) => Record<string, unknown>);

export interface StubRequest {
  api: StubApi;
  /** The parsed JSON body. */
  body: Json;
  /** `Date.now()` when the body had been read. */
  receivedAt: number;
  /**
   * Flattened user-visible conversation the CLI sent, one entry per line: `user: …`, `assistant: …`,
   * `tool_call: <name> <json>`, `tool_result: …` (system/developer prompts and injected context are left out).
   */
  transcript: string;
  /** The text of the latest real user prompt in the conversation (what markers are matched against). */
  prompt: string;
  /** The marker whose queue answered, or null for the default queue. */
  marker: string | null;
  /** The scripted turn this request consumed (as scripted, `delayMs` included), or null: answered "OK". */
  turn: StubTurn | null;
  /**
   * The names of the tools the request offered to the model, as the model would call them: Codex functions
   * (`exec_command`, a namespace's members as `<namespace>.<name>`), Claude tools (`Bash`, `mcp__srv__tool`).
   */
  tools: string[];
  /** Whether the client asked for a stream (always true for Codex). */
  stream: boolean;
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

interface Queue {
  turns: StubTurn[];
  /** Remaining repeats of an error turn at the head of the queue. */
  repeatsLeft?: number;
}

const DEFAULT_TURN: StubTurn = { text: 'OK' };

/** One model the stub lists; `efforts` only matter to Codex's listing. */
export interface StubModel {
  id: string;
  label: string;
  efforts?: string[];
}

/** What `GET /v1/models` answers: the lists, or an error for every model-list request while set. */
export interface StubModelLists {
  codex: StubModel[];
  anthropic: StubModel[];
  error: { status: number; message: string } | null;
}

/** A model-list request the stub answered (kept apart from `requests`, which are model turns). */
export interface StubModelListRequest {
  api: StubApi;
  url: string;
  headers: http.IncomingHttpHeaders;
}

export class ModelStub {
  readonly url: string;
  readonly requests: StubRequest[] = [];
  /** Requests to paths the stub does not serve (answered 404); should stay empty. */
  readonly unhandled: { method: string; url: string }[] = [];
  /** What `GET /v1/models` answers; a suite changes it between refreshes. */
  readonly models: StubModelLists = { anthropic: [], codex: [], error: null };
  readonly modelListRequests: StubModelListRequest[] = [];

  private readonly defaultQueue: Queue = { turns: [] };
  private readonly markerQueues = new Map<string, Queue>();
  private readonly open = new Set<http.ServerResponse>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly waiters: { count: number; resolve: () => void; reject: (error: Error) => void }[] = [];
  private ids = 0;
  private closed = false;

  private constructor(private readonly server: http.Server) {
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
  }

  static async start(): Promise<ModelStub> {
    const server = http.createServer();
    // An idle keep-alive connection stays open as long as the providers' API front ends keep
    // theirs (about a minute), not 1 s: a CLI reuses its connection, and one that the server closes
    // just as the CLI sends on it is reset (Claude Code: "Connection dropped (ECONNRESET)", a run
    // of `fleet` failed so beside two busy processes) — a race the real API almost never offers.
    // close() ends them all, so they do not keep a test process alive.
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const stub = new ModelStub(server);
    server.on('request', (req, res) => {
      stub.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/json' });
        }
        res.end(JSON.stringify({ error: { message: `model stub failure: ${String(error)}` } }));
      });
    });
    return stub;
  }

  /** Queue turns for requests that match no marker; each model request consumes one, in order. */
  script(turns: StubTurn[]): void {
    this.defaultQueue.turns.push(...turns);
  }

  /**
   * Queue turns for requests whose latest user prompt contains `marker`. Tool round-trips keep the prompt, so
   * a whole tool conversation stays on its marker's queue. Falls back to "OK" when the queue is empty.
   */
  scriptFor(marker: string, turns: StubTurn[]): void {
    let queue = this.markerQueues.get(marker);
    if (!queue) {
      queue = { turns: [] };
      this.markerQueues.set(marker, queue);
    }
    queue.turns.push(...turns);
  }

  /** Resolves once at least `count` model requests have been received (rejects after `timeoutMs`). */
  waitForRequests(count: number, timeoutMs = 30_000): Promise<void> {
    if (this.requests.length >= count) {
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`model stub: ${this.requests.length} of ${count} requests after ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push({
        count,
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  /** Stops the server, ending hanging/delayed responses and dropping keep-alive connections. */
  async close(): Promise<void> {
    if (this.closed) {
      return;
    }
    this.closed = true;
    for (const waiter of this.waiters.splice(0)) {
      waiter.reject(new Error(`model stub closed after ${this.requests.length} requests`));
    }
    for (const timer of this.timers) {
      clearTimeout(timer);
    }
    this.timers.clear();
    for (const res of this.open) {
      res.socket?.destroy();
    }
    this.open.clear();
    const done = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await done;
  }

  // ---------------------------------------------------------------------------------------------------------

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const pathname = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && /\/v1\/models\/?$/.test(pathname)) {
      this.answerModelList(req, res);
      return;
    }
    const api: StubApi | null =
      req.method === 'POST' && /\/v1\/responses\/?$/.test(pathname)
        ? 'openai'
        : req.method === 'POST' && /\/v1\/messages\/?$/.test(pathname)
          ? 'anthropic'
          : null;
    if (!api) {
      this.unhandled.push({ method: req.method ?? '', url: req.url ?? '' });
      await readBody(req).catch(() => undefined);
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `model stub: no route for ${req.method} ${req.url}` } }));
      return;
    }

    const raw = await readBody(req);
    const body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : {};
    const conversation = api === 'openai' ? openaiConversation(body) : anthropicConversation(body);
    const prompt = latestPrompt(conversation);
    const marker = this.markerFor(conversation);
    const turn = this.take(marker);
    const record: StubRequest = {
      api,
      body,
      headers: req.headers,
      marker,
      method: req.method ?? 'POST',
      prompt,
      receivedAt: Date.now(),
      stream: api === 'openai' ? body.stream !== false : body.stream === true,
      tools: api === 'openai' ? openaiToolNames(body) : anthropicToolNames(body),
      transcript: conversation.map((entry) => `${entry.role}: ${entry.text}`).join('\n'),
      turn,
      url: req.url ?? '',
    };
    this.requests.push(record);
    for (const waiter of this.waiters.filter((w) => this.requests.length >= w.count)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }

    this.open.add(res);
    res.on('close', () => this.open.delete(res));
    // A scripted call of a tool the CLI did not offer fails through the CLI's own error path.
    this.answer(record, turn === null ? DEFAULT_TURN : resolveTurn(turn, record), res);
  }

  /**
   * Codex asks with `?client_version=` and its provider's key as a Bearer token; the Anthropic API is
   * asked with `anthropic-version` (and `x-api-key`). Each gets its real response shape.
   */
  private answerModelList(req: http.IncomingMessage, res: http.ServerResponse): void {
    const api: StubApi = req.headers['anthropic-version'] !== undefined ? 'anthropic' : 'openai';
    this.modelListRequests.push({ api, headers: req.headers, url: req.url ?? '' });
    const { error } = this.models;
    if (error) {
      const body =
        api === 'anthropic'
          ? { error: { message: error.message, type: anthropicErrorType(error.status) }, type: 'error' }
          : { error: { code: null, message: error.message, param: null, type: 'server_error' } };
      res.writeHead(error.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    if (api === 'anthropic') {
      const data = this.models.anthropic.map((m, i) => ({
        created_at: new Date(Date.UTC(2026, 0, 1 + i)).toISOString(),
        display_name: m.label,
        id: m.id,
        type: 'model',
      }));
      res.end(
        JSON.stringify({
          data,
          first_id: data[0]?.id ?? null,
          has_more: false,
          last_id: data[data.length - 1]?.id ?? null,
        }),
      );
      return;
    }
    res.end(JSON.stringify({ models: this.models.codex.map(codexModelInfo) }));
  }

  private answer(request: StubRequest, turn: StubTurn, res: http.ServerResponse): void {
    if (res.destroyed || this.closed) {
      return;
    }
    if ('hang' in turn) {
      return;
    }
    if ('after' in turn) {
      const go = () => this.answer(request, turn.then, res);
      void turn.after.then(go, go);
      return;
    }
    if ('delayMs' in turn) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.answer(request, turn.then, res);
      }, turn.delayMs);
      this.timers.add(timer);
      res.on('close', () => {
        clearTimeout(timer);
        this.timers.delete(timer);
      });
      return;
    }
    if ('error' in turn) {
      const { status, message, code } = turn.error;
      const payload =
        request.api === 'openai'
          ? { error: { code: code ?? openaiErrorCode(status), message, type: openaiErrorType(status) } }
          : { error: { message, type: code ?? anthropicErrorType(status) }, type: 'error' };
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
      return;
    }
    const n = ++this.ids;
    if (request.api === 'openai') {
      sendOpenAi(res, n, turn, request.body?.model ?? 'fake-model');
    } else if (request.stream) {
      sendAnthropicStream(res, n, turn, request.body?.model ?? 'fake');
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(anthropicMessage(n, turn, request.body?.model ?? 'fake')));
    }
  }

  /** The marker of the most recent user prompt that contains one (longest marker first on ties). */
  private markerFor(conversation: Entry[]): string | null {
    if (this.markerQueues.size === 0) {
      return null;
    }
    const markers = [...this.markerQueues.keys()].sort((a, b) => b.length - a.length);
    for (let i = conversation.length - 1; i >= 0; i--) {
      if (conversation[i].role !== 'user') {
        continue;
      }
      const found = markers.find((m) => conversation[i].text.includes(m));
      if (found !== undefined) {
        return found;
      }
    }
    return null;
  }

  private take(marker: string | null): StubTurn | null {
    const queue = marker === null ? this.defaultQueue : this.markerQueues.get(marker)!;
    const head = queue.turns[0];
    if (head === undefined) {
      return null;
    }
    if ('error' in head && (head.times ?? 1) > 1) {
      queue.repeatsLeft = (queue.repeatsLeft ?? head.times!) - 1;
      if (queue.repeatsLeft > 0) {
        return head;
      }
      queue.repeatsLeft = undefined;
    }
    return queue.turns.shift()!;
  }
}

// ----------------------------------------------------------------------------------------------------------
// Environments for the CLIs

/**
 * Codex: writes `<dir>/config.toml` (used as CODEX_HOME) with a provider "fake" pointing at the stub, and
 * returns the variables to add to a clean environment (plus PATH). `-m` is not needed: `model` in
 * config.toml is honoured. Prefer a `dir` outside /tmp: Codex warns on stderr ("Refusing to create helper
 * binaries under temporary dir") when CODEX_HOME is under /tmp (harmless).
 */
/**
 * A model of Codex's models endpoint (its `ModelInfo`): the fields Codex 0.171.0 requires to accept an
 * entry (found by taking fields away from a bundled entry until it refused it), with the stub's values.
 */
function codexModelInfo(model: StubModel, index: number): object {
  const efforts = model.efforts ?? ['low', 'medium', 'high'];
  return {
    default_reasoning_level: efforts[0] ?? 'medium',
    description: `${model.label} (model stub)`,
    display_name: model.label,
    experimental_supported_tools: [],
    model_messages: { instructions_template: 'You are a coding agent (model stub).' },
    priority: index + 1,
    shell_type: 'shell_command',
    slug: model.id,
    support_verbosity: false,
    supported_in_api: true,
    supported_reasoning_levels: efforts.map((effort) => ({ description: effort, effort })),
    truncation_policy: { limit: 10_000, mode: 'tokens' },
    visibility: 'list',
  };
}

/**
 * `modelCatalog`: also point Codex's model list at the stub (`model_catalog_url` of the provider), so
 * `codex app-server`'s model/list answers what `stub.models.codex` holds. Off by default: every
 * `codex exec` would otherwise ask for the list too.
 */
export function codexEnvironment(
  stub: ModelStub,
  dir: string,
  options: { modelCatalog?: boolean } = {},
): Record<string, string> {
  // Beside CODEX_HOME, not in it, as a user's ~/.codex is in HOME: the sandbox makes CODEX_HOME
  // writable, and a HOME inside it would be writable with it.
  const home = `${dir}.home`;
  fs.mkdirSync(home, { recursive: true });
  const config = [
    'model = "fake-model"',
    'model_provider = "fake"',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[features]',
    'plugins = false',
    '',
    '[model_providers.fake]',
    'name = "fake"',
    `base_url = "${stub.url}/v1"`,
    'wire_api = "responses"',
    'env_key = "FAKE_KEY"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    ...(options.modelCatalog ? [`model_catalog_url = "${stub.url}/v1/models"`] : []),
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'config.toml'), config);
  return { CODEX_HOME: dir, FAKE_KEY: 'fake-key', HOME: home };
}

/**
 * Claude Code: returns the variables to add to a clean environment (plus PATH). HOME is `<dir>/home`.
 * ANTHROPIC_MODEL=fake stands in for `--model fake`.
 */
export function claudeEnvironment(stub: ModelStub, dir: string): Record<string, string> {
  const home = path.join(dir, 'home');
  fs.mkdirSync(home, { recursive: true });
  return {
    ANTHROPIC_API_KEY: 'sk-fake',
    ANTHROPIC_BASE_URL: stub.url,
    ANTHROPIC_MODEL: 'fake',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CLAUDE_CODE_MAX_RETRIES: '0',
    DISABLE_TELEMETRY: '1',
    HOME: home,
    IS_SANDBOX: '1',
  };
}

// ----------------------------------------------------------------------------------------------------------
// Conversation flattening

interface Entry {
  role: 'user' | 'assistant' | 'tool_call' | 'tool_result';
  text: string;
}

/** Text the CLIs inject into user messages that is not the user's prompt. */
function isInjected(text: string): boolean {
  const t = text.trimStart();
  return t.startsWith('<environment_context>') || t.startsWith('<system-reminder>');
}

function textOf(content: unknown): string {
  if (typeof content === 'string') {
    return content;
  }
  if (Array.isArray(content)) {
    return content
      .map((part: Json) => (typeof part === 'string' ? part : typeof part?.text === 'string' ? part.text : ''))
      .filter((t) => t !== '')
      .join('\n');
  }
  return '';
}

function openaiConversation(body: Json): Entry[] {
  const entries: Entry[] = [];
  const input =
    typeof body?.input === 'string' ? [{ content: body.input, role: 'user', type: 'message' }] : body?.input;
  for (const item of Array.isArray(input) ? input : []) {
    const type = item?.type ?? 'message';
    if (type === 'message' && (item.role === 'user' || item.role === 'assistant')) {
      const parts = (Array.isArray(item.content) ? item.content : [item.content])
        .map((part: Json) => textOf([part]))
        .filter((t: string) => t !== '' && !isInjected(t));
      if (parts.length > 0) {
        entries.push({ role: item.role, text: parts.join('\n') });
      }
    } else if (type === 'function_call') {
      entries.push({ role: 'tool_call', text: `${item.name} ${item.arguments}` });
    } else if (type === 'function_call_output') {
      entries.push({ role: 'tool_result', text: typeof item.output === 'string' ? item.output : textOf(item.output) });
    }
  }
  return entries;
}

function anthropicConversation(body: Json): Entry[] {
  const entries: Entry[] = [];
  for (const message of Array.isArray(body?.messages) ? body.messages : []) {
    if (message?.role !== 'user' && message?.role !== 'assistant') {
      continue; // Claude Code sends `role: "system"` messages (environment blocks) inside `messages`
    }
    const blocks = typeof message.content === 'string' ? [{ text: message.content, type: 'text' }] : message.content;
    const texts: string[] = [];
    for (const block of Array.isArray(blocks) ? blocks : []) {
      if (block?.type === 'text' && typeof block.text === 'string' && !isInjected(block.text)) {
        texts.push(block.text);
      } else if (block?.type === 'tool_use') {
        entries.push({ role: 'tool_call', text: `${block.name} ${JSON.stringify(block.input)}` });
      } else if (block?.type === 'tool_result') {
        entries.push({ role: 'tool_result', text: textOf(block.content) });
      }
    }
    if (texts.length > 0) {
      entries.push({ role: message.role, text: texts.join('\n') });
    }
  }
  return entries;
}

function latestPrompt(conversation: Entry[]): string {
  for (let i = conversation.length - 1; i >= 0; i--) {
    if (conversation[i].role === 'user') {
      return conversation[i].text;
    }
  }
  return '';
}

// ----------------------------------------------------------------------------------------------------------
// OpenAI Responses API (streaming)

type AnswerTurn =
  Extract<StubTurn, { text: string }> | Extract<StubTurn, { shell: string }> | Extract<StubTurn, { tool: string }>;

/** Codex's tool names: functions by name, a namespace's members as `<namespace>.<name>`, other kinds by type. */
function openaiToolNames(body: Json): string[] {
  const names: string[] = [];
  for (const tool of Array.isArray(body?.tools) ? body.tools : []) {
    if (tool?.type === 'namespace' && Array.isArray(tool.tools)) {
      for (const member of tool.tools) {
        names.push(`${tool.name}.${member?.name}`);
      }
    } else {
      names.push(typeof tool?.name === 'string' ? tool.name : String(tool?.type));
    }
  }
  return names;
}

function anthropicToolNames(body: Json): string[] {
  return (Array.isArray(body?.tools) ? body.tools : []).map((tool: Json) => String(tool?.name ?? tool?.type));
}

/**
 * The offered name a scripted `tool` turn calls: the exact name, else the one offered name that ends in
 * `.<tool>` (a Codex namespace member) or `__<tool>` (a Claude MCP tool), so a suite can say `list_timers`
 * for both CLIs. Null when none (or several) match.
 */
export function resolveToolName(tool: string, offered: readonly string[]): string | null {
  if (offered.includes(tool)) {
    return tool;
  }
  const matches = offered.filter((name) => name.endsWith(`.${tool}`) || name.endsWith(`__${tool}`));
  return matches.length === 1 ? matches[0] : null;
}

/**
 * A scripted tool turn with its name resolved against what the request offered and its arguments computed;
 * an error turn if the tool was not offered.
 */
function resolveTurn(turn: StubTurn, request: StubRequest): StubTurn {
  if ('delayMs' in turn || 'after' in turn) {
    return { ...turn, then: resolveTurn(turn.then, request) };
  }
  if (!('tool' in turn)) {
    return turn;
  }
  const name = resolveToolName(turn.tool, request.tools);
  if (name === null) {
    return {
      error: {
        message: `model stub: the scripted tool ${turn.tool} was not offered (offered: ${request.tools.join(', ')})`,
        status: 400,
      },
    };
  }
  return {
    ...turn,
    arguments: typeof turn.arguments === 'function' ? turn.arguments(request) : turn.arguments,
    tool: name,
  };
}

/** Arguments of a resolved tool turn (resolveTurn has already called a function). */
function toolArguments(turn: Extract<StubTurn, { tool: string }>): Record<string, unknown> {
  return typeof turn.arguments === 'function' ? {} : turn.arguments;
}

function sse(res: http.ServerResponse, event: string, data: object): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
}

function sendOpenAi(res: http.ServerResponse, n: number, turn: AnswerTurn, model: string): void {
  res.writeHead(200, { 'cache-control': 'no-cache', 'content-type': 'text/event-stream' });
  let seq = 0;
  const send = (event: string, data: object): void => sse(res, event, { sequence_number: seq++, ...data });
  const responseId = `resp_${n}`;
  const output: object[] = [];
  send('response.created', {
    response: { id: responseId, model, object: 'response', output: [], status: 'in_progress' },
  });

  const reasoning = 'reasoning' in turn ? turn.reasoning : undefined;
  if (reasoning !== undefined) {
    const id = `rs_${n}`;
    const index = output.length;
    const part = { text: reasoning, type: 'summary_text' };
    const item = { id, summary: [part], type: 'reasoning' };
    send('response.output_item.added', { item: { id, summary: [], type: 'reasoning' }, output_index: index });
    send('response.reasoning_summary_part.added', {
      item_id: id,
      output_index: index,
      part: { text: '', type: 'summary_text' },
      summary_index: 0,
    });
    send('response.reasoning_summary_text.delta', {
      delta: reasoning,
      item_id: id,
      output_index: index,
      summary_index: 0,
    });
    send('response.reasoning_summary_text.done', {
      item_id: id,
      output_index: index,
      summary_index: 0,
      text: reasoning,
    });
    send('response.reasoning_summary_part.done', { item_id: id, output_index: index, part, summary_index: 0 });
    send('response.output_item.done', { item, output_index: index });
    output.push(item);
  }

  if (turn.text !== undefined) {
    const id = `msg_${n}`;
    const index = output.length;
    const part = { annotations: [], text: turn.text, type: 'output_text' };
    const item = { content: [part], id, role: 'assistant', status: 'completed', type: 'message' };
    send('response.output_item.added', {
      item: { content: [], id, role: 'assistant', status: 'in_progress', type: 'message' },
      output_index: index,
    });
    send('response.content_part.added', {
      content_index: 0,
      item_id: id,
      output_index: index,
      part: { annotations: [], text: '', type: 'output_text' },
    });
    send('response.output_text.delta', { content_index: 0, delta: turn.text, item_id: id, output_index: index });
    send('response.output_text.done', { content_index: 0, item_id: id, output_index: index, text: turn.text });
    send('response.content_part.done', { content_index: 0, item_id: id, output_index: index, part });
    send('response.output_item.done', { item, output_index: index });
    output.push(item);
  }

  if ('shell' in turn) {
    const id = `fc_${n}`;
    const index = output.length;
    const args = JSON.stringify({ cmd: turn.shell });
    const base = { call_id: `call_${n}`, id, name: 'exec_command', type: 'function_call' };
    const item = { ...base, arguments: args, status: 'completed' };
    send('response.output_item.added', {
      item: { ...base, arguments: '', status: 'in_progress' },
      output_index: index,
    });
    send('response.function_call_arguments.delta', { delta: args, item_id: id, output_index: index });
    send('response.function_call_arguments.done', { arguments: args, item_id: id, output_index: index });
    send('response.output_item.done', { item, output_index: index });
    output.push(item);
  }

  if ('tool' in turn) {
    const id = `fc_${n}`;
    const index = output.length;
    const args = JSON.stringify(toolArguments(turn));
    // A namespace member (`mcp__<server>.<tool>`) is called by its own name with the namespace beside it.
    const dot = turn.tool.lastIndexOf('.');
    const name = dot < 0 ? { name: turn.tool } : { name: turn.tool.slice(dot + 1), namespace: turn.tool.slice(0, dot) };
    const base = { call_id: `call_${n}`, id, ...name, type: 'function_call' };
    const item = { ...base, arguments: args, status: 'completed' };
    send('response.output_item.added', {
      item: { ...base, arguments: '', status: 'in_progress' },
      output_index: index,
    });
    send('response.function_call_arguments.delta', { delta: args, item_id: id, output_index: index });
    send('response.function_call_arguments.done', { arguments: args, item_id: id, output_index: index });
    send('response.output_item.done', { item, output_index: index });
    output.push(item);
  }

  send('response.completed', {
    response: {
      id: responseId,
      model,
      object: 'response',
      output,
      status: 'completed',
      usage: {
        input_tokens: 100,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 20,
        output_tokens_details: { reasoning_tokens: reasoning !== undefined ? 7 : 0 },
        total_tokens: 120,
      },
    },
  });
  res.end();
}

function openaiErrorType(status: number): string {
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

function openaiErrorCode(status: number): string {
  return status >= 500 ? 'server_error' : 'invalid_prompt';
}

// ----------------------------------------------------------------------------------------------------------
// Anthropic Messages API (streaming and non-streaming)

function anthropicBlocks(n: number, turn: AnswerTurn): { blocks: Json[]; stopReason: 'end_turn' | 'tool_use' } {
  const blocks: Json[] = [];
  if ('reasoning' in turn && turn.reasoning !== undefined) {
    blocks.push({ signature: `fakesig_${n}`, thinking: turn.reasoning, type: 'thinking' });
  }
  if (turn.text !== undefined) {
    blocks.push({ text: turn.text, type: 'text' });
  }
  if ('shell' in turn) {
    blocks.push({
      id: `toolu_${n}`,
      input: { command: turn.shell, description: 'Run a shell command' },
      name: 'Bash',
      type: 'tool_use',
    });
  }
  if ('tool' in turn) {
    blocks.push({ id: `toolu_${n}`, input: toolArguments(turn), name: turn.tool, type: 'tool_use' });
  }
  return { blocks, stopReason: 'shell' in turn || 'tool' in turn ? 'tool_use' : 'end_turn' };
}

const USAGE = { cache_creation_input_tokens: 0, cache_read_input_tokens: 0, input_tokens: 100 };

function anthropicMessage(n: number, turn: AnswerTurn, model: string): object {
  const { blocks, stopReason } = anthropicBlocks(n, turn);
  return {
    content: blocks,
    id: `msg_stub_${n}`,
    model,
    role: 'assistant',
    stop_reason: stopReason,
    stop_sequence: null,
    type: 'message',
    usage: { ...USAGE, output_tokens: 20 },
  };
}

function sendAnthropicStream(res: http.ServerResponse, n: number, turn: AnswerTurn, model: string): void {
  const { blocks, stopReason } = anthropicBlocks(n, turn);
  res.writeHead(200, { 'cache-control': 'no-cache', 'content-type': 'text/event-stream' });
  sse(res, 'message_start', {
    message: {
      content: [],
      id: `msg_stub_${n}`,
      model,
      role: 'assistant',
      stop_reason: null,
      stop_sequence: null,
      type: 'message',
      usage: { ...USAGE, output_tokens: 1 },
    },
  });
  blocks.forEach((block, index) => {
    if (block.type === 'thinking') {
      sse(res, 'content_block_start', { content_block: { signature: '', thinking: '', type: 'thinking' }, index });
      sse(res, 'content_block_delta', { delta: { thinking: block.thinking, type: 'thinking_delta' }, index });
      sse(res, 'content_block_delta', { delta: { signature: block.signature, type: 'signature_delta' }, index });
    } else if (block.type === 'text') {
      sse(res, 'content_block_start', { content_block: { text: '', type: 'text' }, index });
      sse(res, 'content_block_delta', { delta: { text: block.text, type: 'text_delta' }, index });
    } else {
      sse(res, 'content_block_start', { content_block: { ...block, input: {} }, index });
      sse(res, 'content_block_delta', {
        delta: { partial_json: JSON.stringify(block.input), type: 'input_json_delta' },
        index,
      });
    }
    sse(res, 'content_block_stop', { index });
  });
  sse(res, 'message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 20 } });
  sse(res, 'message_stop', {});
  res.end();
}

function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 529:
      return 'overloaded_error';
    default:
      return 'api_error';
  }
}

// ----------------------------------------------------------------------------------------------------------

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', reject);
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      try {
        switch ((req.headers['content-encoding'] ?? '').toLowerCase()) {
          case 'gzip':
            return resolve(zlib.gunzipSync(raw));
          case 'deflate':
            return resolve(zlib.inflateSync(raw));
          case 'br':
            return resolve(zlib.brotliDecompressSync(raw));
          default:
            return resolve(raw);
        }
      } catch (error) {
        reject(error);
      }
    });
  });
}

/** Where `npm test` installs the pinned real CLIs (test/agent-clis). */
export const AGENT_CLI_BIN = path.join(__dirname, '..', 'agent-clis', 'node_modules', '.bin');

/** The two real CLIs with the environment that points each at a stub: for `describe.each`. */
export const REAL_AGENT_CLIS = [
  { env: codexEnvironment, executable: path.join(AGENT_CLI_BIN, 'codex'), provider: 'codex' },
  { env: claudeEnvironment, executable: path.join(AGENT_CLI_BIN, 'claude'), provider: 'claude-code' },
] as const;
