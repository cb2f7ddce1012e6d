import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Request, Response } from 'express';

import type { Terminal } from '@libs/contracts';

import { AgentEnvironmentService } from '../agents/agent-environment.service';
import { AgentSandbox } from '../agents/agent-sandbox';
import { agentVariables } from '../agents/agent-variables';
import { findExecutable } from '../agents/executable';
import { RUN_MARKER_VARIABLE, endMarkedWith, killRunTree, workspaceMarkerPrefix } from '../agents/process-tree';
import { packageRoot } from '../core/package-info';
import { RUNTIME, Runtime } from '../core/runtime';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { conflict, notFound, unavailable } from '../core/errors/domain-error';
import { SecretsService } from '../core/secrets/secrets.service';
import { NetworkService } from '../network/network.service';
import { RequirementsService } from '../requirements/requirements.service';
import { WorktreesService } from '../worktrees/worktrees.service';

/** Terminals open at once (all Requirements), and what one keeps to replay to a page that attaches. */
export const TERMINALS_MAX = 8;
const SCROLLBACK_BYTES = 256 * 1024;
/** No input and no page attached for this long closes a terminal. */
const IDLE_MS = 30 * 60 * 1000;
/** A page that closed (its stream ended) may come back this soon (a reload) before the terminal goes. */
const DETACHED_GRACE_MS = 10_000;
const HEARTBEAT_MS = 15_000;
/** A page slower than this much unsent output is dropped (it reattaches and gets the scrollback). */
const STREAM_BUFFER_MAX = 4 * 1024 * 1024;

/** The pseudo-terminal: util-linux `script`, which the shell helper runs inside. */
const SCRIPT = ['/usr/bin/script', '/bin/script'].find((candidate) => fs.existsSync(candidate)) ?? null;
/** The helper that sizes the terminal and runs the shell (compiled beside this file, or the built one). */
const TERMINAL_SHELL =
  [
    path.resolve(__dirname, 'terminal-shell.js'),
    path.join(packageRoot(), 'dist', 'server', 'src', 'terminals', 'terminal-shell.js'),
  ].find((file) => fs.existsSync(file)) ?? path.resolve(__dirname, 'terminal-shell.js');

interface OpenTerminal {
  id: string;
  requirementId: string;
  createdAt: string;
  rows: number;
  cols: number;
  marker: string;
  tmp: string;
  control: string;
  child: ChildProcess;
  /** Resolves once the shell's sandbox has exited. */
  exited: Promise<void>;
  scrollback: Buffer[];
  scrollbackBytes: number;
  /** The pages attached (their event streams). */
  streams: Set<Response>;
  lastActivity: number;
  detachedSince: number | null;
  exitCode: number | null;
  closing: Promise<void> | null;
}

/**
 * Terminals in the browser on a Requirement's working copy (issue 48 §4): a shell on a
 * pseudo-terminal, running as the person but inside the same sandbox and network as the
 * Requirement's agent (it is the agent's working copy: whatever runs there is the agent's). Output
 * goes to the page as a server-sent stream of base64 frames; input, resizes and the close come as
 * requests. A terminal closes when its shell exits, when its page has been gone 10 s, after 30
 * idle minutes, with its Requirement's working copy's owner (the manager), never by itself otherwise.
 */
@Injectable()
export class TerminalsService implements BeforeApplicationShutdown, OnModuleInit {
  private readonly logger = new Logger('Terminals');
  private readonly terminals = new Map<string, OpenTerminal>();
  private readonly sweeper: NodeJS.Timeout;
  /** This workspace's terminals' markers start with it (what a killed manager left is ended at the next start). */
  private readonly markerPrefix: string;

  constructor(
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly environment: AgentEnvironmentService,
    private readonly network: NetworkService,
    private readonly requirements: RequirementsService,
    private readonly sandbox: AgentSandbox,
    private readonly secrets: SecretsService,
    private readonly worktrees: WorktreesService,
    @Inject(RUNTIME) runtime: Runtime,
  ) {
    this.markerPrefix = workspaceMarkerPrefix('terminal', runtime.paths.home, runtime.paths.root);
    this.sweeper = setInterval(() => this.sweep(), 5000);
    this.sweeper.unref();
  }

  async onModuleInit(): Promise<void> {
    const orphans = await endMarkedWith(this.markerPrefix);
    if (orphans > 0) {
      this.logger.warn(`ended ${orphans} terminal(s) a previous manager left running`);
    }
  }

  list(requirementId: string): Promise<Terminal[]> {
    return this.requirements
      .get(requirementId)
      .then(() =>
        [...this.terminals.values()].filter((t) => t.requirementId === requirementId).map((t) => this.view(t)),
      );
  }

  async open(requirementId: string, rows: number, cols: number): Promise<Terminal> {
    const requirement = await this.requirements.get(requirementId);
    const place = await this.worktrees.previewPlace(requirementId);
    if (place === null) {
      throw conflict('no_worktree', `Requirement ${requirementId} has no working copy now (its next run makes one)`);
    }
    if (SCRIPT === null || process.platform !== 'linux') {
      throw unavailable('terminal_unavailable', 'terminals need util-linux `script` (Linux); it was not found');
    }
    if (this.terminals.size >= TERMINALS_MAX) {
      throw conflict('too_many_terminals', `${TERMINALS_MAX} terminals are open; close one first`);
    }
    const id = `term_${randomBytes(8).toString('hex')}`;
    const marker = `${this.markerPrefix}${id}`;
    const tmp = this.sandbox.makeTemporary(id);
    const control = path.join(tmp, 'control.sock');
    let network;
    try {
      network = await this.network.openRun(
        { id, provider: requirement.provider, requirementId, sessionId: null },
        this.environment.baseEnvironment(requirement.provider),
        () => undefined,
      );
    } catch (err) {
      this.sandbox.removeTemporary(id);
      throw err;
    }
    const env: Record<string, string> = {
      ...agentVariables(
        process.env,
        this.configuration.get('agentEnvironmentPass'),
        'none',
        Object.keys(this.secrets.environment()),
      ),
      ...place.env,
      ...network.env,
      TERM: 'xterm-256color',
      TMPDIR: tmp,
    };
    const shell = findExecutable('bash', env.PATH ?? '', place.cwd) ?? '/bin/sh';
    const inner = [process.execPath, TERMINAL_SHELL, control, String(rows), String(cols), '--', shell, '-i'];
    const quoted = inner.map((arg) => `'${arg.replace(/'/g, `'\\''`)}'`).join(' ');
    // `script` gives the helper a pseudo-terminal of its own; its own output is the terminal's.
    const wrapped = this.sandbox.wrap(SCRIPT, ['-qfec', quoted, '/dev/null'], {
      caps: null,
      cwd: place.cwd,
      env,
      git: place.git,
      network: network.sandbox,
      provider: null,
      readOnlyFiles: [],
      tmp,
      workTree: place.workTree,
    });
    // Its own process group, the marker in its environment: the tree kill finds all of it.
    const child = spawn(wrapped.command, wrapped.args, {
      cwd: place.cwd,
      detached: true,
      env: { ...env, [RUN_MARKER_VARIABLE]: marker },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const terminal: OpenTerminal = {
      child,
      closing: null,
      cols,
      control,
      createdAt: this.clock.nowIso(),
      detachedSince: Date.now(),
      exitCode: null,
      id,
      lastActivity: Date.now(),
      exited: new Promise((resolve) => child.once('close', () => resolve())),
      marker,
      requirementId,
      rows,
      scrollback: [],
      scrollbackBytes: 0,
      streams: new Set(),
      tmp,
    };
    // Raw bytes as they come (a prompt has no line end); the sandbox's own errors too.
    child.stdout?.on('data', (chunk: Buffer) => this.output(terminal, chunk));
    child.stderr?.on('data', (chunk: Buffer) => this.output(terminal, chunk));
    child.stdin?.on('error', () => undefined);
    child.once('error', (err) => this.output(terminal, Buffer.from(`\r\n[terminal: ${err.message}]\r\n`)));
    child.once('exit', (code) => {
      terminal.exitCode = code;
      void this.close(terminal, `the shell exited${code === null ? '' : ` (${code})`}`);
    });
    this.terminals.set(id, terminal);
    this.logger.log({ msg: 'terminal opened', requirementId, terminalId: id });
    return this.view(terminal);
  }

  /** The page's stream: the scrollback first, then output as it comes; the end when the terminal closes. */
  attach(id: string, req: Request, res: Response): void {
    const terminal = this.find(id);
    res.writeHead(200, {
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'Content-Type': 'text/event-stream; charset=utf-8',
      'X-Accel-Buffering': 'no',
    });
    res.write('retry: 2000\n\n');
    if (terminal.scrollbackBytes > 0) {
      res.write(frame(Buffer.concat(terminal.scrollback)));
    }
    terminal.streams.add(res);
    terminal.detachedSince = null;
    const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), HEARTBEAT_MS);
    const detach = () => {
      clearInterval(heartbeat);
      terminal.streams.delete(res);
      if (terminal.streams.size === 0) {
        terminal.detachedSince = Date.now();
      }
    };
    res.on('close', detach);
    req.on('close', detach);
  }

  input(id: string, data: string): void {
    const terminal = this.find(id);
    terminal.lastActivity = Date.now();
    terminal.child.stdin?.write(data);
  }

  /** Resolves once the terminal has the new size (or the shell helper did not answer in 2 s). */
  resize(id: string, rows: number, cols: number): Promise<void> {
    const terminal = this.find(id);
    terminal.rows = rows;
    terminal.cols = cols;
    return new Promise((resolve) => {
      const socket = net.connect(terminal.control);
      const done = () => {
        socket.destroy();
        resolve();
      };
      socket.setTimeout(2000, done);
      socket.on('error', done);
      socket.on('close', done);
      socket.on('data', (chunk: Buffer) => chunk.includes('\n') && done());
      socket.write(`${rows} ${cols}\n`);
    });
  }

  async remove(id: string): Promise<void> {
    await this.close(this.find(id), 'closed');
  }

  beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.sweeper);
    return Promise.all([...this.terminals.values()].map((t) => this.close(t, 'Agent Manager stopped'))).then(
      () => undefined,
    );
  }

  private find(id: string): OpenTerminal {
    const terminal = this.terminals.get(id);
    if (!terminal || terminal.closing !== null) {
      throw notFound('terminal_not_found', `no open terminal ${id}`);
    }
    return terminal;
  }

  private output(terminal: OpenTerminal, chunk: Buffer): void {
    terminal.scrollback.push(chunk);
    terminal.scrollbackBytes += chunk.length;
    while (terminal.scrollbackBytes > SCROLLBACK_BYTES && terminal.scrollback.length > 1) {
      terminal.scrollbackBytes -= (terminal.scrollback.shift() as Buffer).length;
    }
    const data = frame(chunk);
    for (const res of terminal.streams) {
      res.write(data);
      if (res.writableLength > STREAM_BUFFER_MAX) {
        res.destroy();
      }
    }
  }

  /** Closed once: the shell and everything it started, its network, its temporary directory; its pages' streams end. */
  private close(terminal: OpenTerminal, reason: string): Promise<void> {
    terminal.closing ??= (async () => {
      this.terminals.delete(terminal.id);
      await killRunTree(terminal.marker, terminal.child.pid ?? null).catch(() => undefined);
      await terminal.exited;
      await this.network.closeRun(terminal.id).catch(() => undefined);
      this.sandbox.removeTemporary(terminal.id);
      for (const res of terminal.streams) {
        res.write(`event: closed\ndata: ${JSON.stringify({ reason })}\n\n`);
        res.end();
      }
      this.logger.log({
        msg: 'terminal closed',
        reason,
        requirementId: terminal.requirementId,
        terminalId: terminal.id,
      });
    })();
    return terminal.closing;
  }

  /** Closes the terminals whose page is gone, and the idle ones. */
  private sweep(): void {
    const now = Date.now();
    for (const terminal of this.terminals.values()) {
      if (terminal.detachedSince !== null && now - terminal.detachedSince > DETACHED_GRACE_MS) {
        void this.close(terminal, 'its page closed');
      } else if (now - terminal.lastActivity > IDLE_MS) {
        void this.close(terminal, 'idle for 30 minutes');
      }
    }
  }

  private view(terminal: OpenTerminal): Terminal {
    return {
      cols: terminal.cols,
      createdAt: terminal.createdAt,
      id: terminal.id,
      requirementId: terminal.requirementId,
      rows: terminal.rows,
    };
  }
}

function frame(bytes: Buffer): string {
  return `data: ${bytes.toString('base64')}\n\n`;
}
