import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as readline from 'node:readline';

import type { CatalogModel } from '@libs/contracts';

import { RUN_MARKER_VARIABLE, killRunTree } from '../agents/process-tree';
import { acceptedEfforts } from './known-models';

export interface CodexListingOptions {
  executable: string;
  env: Record<string, string>;
  cwd: string;
  timeoutMs: number;
  /** Aborted when the manager shuts down: the process (its own group) must not outlive it. */
  signal?: AbortSignal;
}

/** The part of `codex app-server`'s `model/list` answer (its v2 `Model`) the catalog reads. */
interface CodexModel {
  model?: unknown;
  displayName?: unknown;
  hidden?: unknown;
  supportedReasoningEfforts?: unknown;
}

/**
 * How long `initialize` may take: Codex answers it in well under a second (before any network),
 * so a program that does not (not Codex, or one that waits on stdin) fails the refresh quickly
 * instead of holding `POST /api/models/refresh` for the whole listing timeout.
 */
const HANDSHAKE_TIMEOUT_MS = 5_000;

/** Pages asked for at most: the listing is a few dozen models; this only bounds a looping cursor. */
const MAX_PAGES = 10;

/**
 * Codex's own model list, as its pickers show it: `codex app-server` (JSON-RPC 2.0, one JSON
 * object a line on stdio) answers `initialize`, then `model/list` (paged by `nextCursor`). Codex
 * fills that list from its provider's models endpoint, its cache of it (`models_cache.json` in
 * CODEX_HOME) or its bundled catalog; when none of them gives anything it answers an empty
 * list, which is a failure here (there is nothing to offer). Checked against Codex 0.171.0's
 * generated schema (`codex app-server generate-ts`). No thread is started: no model is called.
 */
export async function listCodexModels(options: CodexListingOptions): Promise<CatalogModel[]> {
  // Marked as a run's processes are: whatever the app-server starts in another process group
  // (an MCP server, a tool) is found by the marker and ended with it.
  const marker = `model-list-${randomUUID()}`;
  const child = spawn(options.executable, ['app-server'], {
    cwd: options.cwd,
    detached: true,
    env: { ...options.env, [RUN_MARKER_VARIABLE]: marker },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-2000);
  });
  const pending = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();
  const failAll = (error: Error) => {
    for (const waiter of pending.values()) {
      waiter.reject(error);
    }
    pending.clear();
  };
  const exited = new Promise<never>((_resolve, reject) => {
    child.once('error', (error) =>
      reject(new Error(`could not start ${options.executable} app-server: ${error.message}`)),
    );
    child.once('exit', (code, signal) => {
      const tail = lastLine(stderr);
      reject(
        new Error(
          `${options.executable} app-server exited (${signal ?? `code ${code}`}) before answering${tail ? `: ${tail}` : ''}`,
        ),
      );
    });
  });
  exited.catch(failAll);
  const lines = readline.createInterface({ input: child.stdout });
  lines.on('line', (line) => {
    let message: { id?: unknown; result?: unknown; error?: { message?: unknown } };
    try {
      message = JSON.parse(line) as typeof message;
    } catch {
      return; // not a protocol line
    }
    const waiter = typeof message.id === 'number' ? pending.get(message.id) : undefined;
    if (!waiter || typeof message.id !== 'number') {
      return; // a notification (remoteControl/status/changed …)
    }
    pending.delete(message.id);
    if (message.error) {
      waiter.reject(new Error(`codex app-server refused: ${String(message.error.message ?? 'error')}`));
    } else {
      waiter.resolve(message.result);
    }
  });
  let nextId = 0;
  const request = (method: string, params: unknown): Promise<unknown> => {
    const id = ++nextId;
    const answer = new Promise<unknown>((resolve, reject) => pending.set(id, { reject, resolve }));
    child.stdin.write(`${JSON.stringify({ id, jsonrpc: '2.0', method, params })}\n`);
    return answer;
  };
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`codex app-server did not list its models within ${options.timeoutMs / 1000} s`)),
      options.timeoutMs,
    );
    onAbort = () => reject(new Error('the manager is shutting down'));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) {
      onAbort();
    }
  });
  // A closed pipe is reported through `exited`, not as an unhandled stream error.
  child.stdin.on('error', () => undefined);
  try {
    const list = async (): Promise<CatalogModel[]> => {
      let handshakeTimer: NodeJS.Timeout | undefined;
      const handshake = new Promise<never>((_resolve, reject) => {
        handshakeTimer = setTimeout(
          () =>
            reject(
              new Error(
                `${options.executable} app-server did not answer initialize within ${HANDSHAKE_TIMEOUT_MS / 1000} s (is it the Codex CLI?)`,
              ),
            ),
          HANDSHAKE_TIMEOUT_MS,
        );
      });
      try {
        await Promise.race([
          request('initialize', {
            capabilities: null,
            clientInfo: { name: 'agent-manager', title: 'Agent Manager', version: '1' },
          }),
          handshake,
        ]);
      } finally {
        clearTimeout(handshakeTimer);
      }
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'initialized' })}\n`);
      const models: CatalogModel[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < MAX_PAGES; page++) {
        const result = (await request('model/list', { cursor, includeHidden: false })) as {
          data?: unknown;
          nextCursor?: unknown;
        } | null;
        const data = Array.isArray(result?.data) ? (result.data as CodexModel[]) : [];
        models.push(...data.flatMap(toCatalogModel));
        cursor = typeof result?.nextCursor === 'string' ? result.nextCursor : null;
        if (cursor === null) {
          break;
        }
      }
      if (models.length === 0) {
        throw new Error(
          'codex app-server listed no models (its models endpoint failed and it has no cached or bundled list)',
        );
      }
      return models;
    };
    return await Promise.race([list(), exited, timeout]);
  } finally {
    clearTimeout(timer);
    if (onAbort) {
      options.signal?.removeEventListener('abort', onAbort);
    }
    lines.close();
    child.stdin.end();
    // Its own process group and everything carrying its marker: nothing it started outlives it.
    // No grace: it is only listing models.
    await killRunTree(marker, child.pid ?? null, 0).catch(() => undefined);
  }
}

function toCatalogModel(model: CodexModel): CatalogModel[] {
  if (typeof model.model !== 'string' || model.model === '' || model.hidden === true) {
    return [];
  }
  const efforts = Array.isArray(model.supportedReasoningEfforts)
    ? (model.supportedReasoningEfforts as { reasoningEffort?: unknown }[]).flatMap((option) =>
        typeof option.reasoningEffort === 'string' ? [option.reasoningEffort] : [],
      )
    : [];
  return [
    {
      efforts: acceptedEfforts(efforts),
      id: model.model,
      label: typeof model.displayName === 'string' && model.displayName !== '' ? model.displayName : model.model,
      provider: 'codex',
      source: 'codex_app_server',
    },
  ];
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return (lines[lines.length - 1] ?? '').replace(/\x1b\[[0-9;]*m/g, '').slice(0, 300);
}
