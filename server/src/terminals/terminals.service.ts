import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Request, Response } from 'express';

import type { ManagerEvent, Terminal } from '@libs/contracts';

import { AgentEnvironmentService } from '../agents/agent-environment.service';
import { AgentSandbox } from '../agents/agent-sandbox';
import { type RunCaps, RunLimits } from '../agents/run-limits';
import { agentVariables } from '../agents/agent-variables';
import { findExecutable } from '../agents/executable';
import { RUN_MARKER_VARIABLE, endMarkedWith, killRunTree, workspaceMarkerPrefix } from '../agents/process-tree';
import { packageRoot } from '../core/package-info';
import { RUNTIME, Runtime } from '../core/runtime';
import { SOCKET_PATH_MAX, isSocketFile } from '../core/unix-socket';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { conflict, forbidden, notFound, unavailable } from '../core/errors/domain-error';
import { SecretsService } from '../core/secrets/secrets.service';
import { NetworkService, type RunNetwork } from '../network/network.service';
import { OnCommitted } from '../events/on-committed';
import { RequirementsService } from '../requirements/requirements.service';
import { type PreviewPlace, WorktreesService } from '../worktrees/worktrees.service';

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
/** Input not yet read by the terminal, at most (past it a request is refused: 409 terminal_busy). */
const INPUT_BUFFER_MAX = 1024 * 1024;
/** How long a close waits for the shell's sandbox to be gone after the tree kill. */
const EXIT_WAIT_MS = 5000;

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
  caps: RunCaps;
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
  private readonly unsubscribeClock: () => void;
  private shuttingDown = false;
  /** Opens under way (counted against the cap before they are in the map). */
  private opening = 0;
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
    private readonly limits: RunLimits,
    @Inject(RUNTIME) runtime: Runtime,
  ) {
    this.markerPrefix = workspaceMarkerPrefix('terminal', runtime.paths.home, runtime.paths.root);
    this.sweeper = setInterval(() => this.sweep(), 5000);
    this.sweeper.unref();
    // Time that jumps (a suspended laptop waking, a test's clock) is looked at at once.
    this.unsubscribeClock = clock.onAdjusted(() => this.sweep());
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
    if (this.shuttingDown) {
      throw unavailable('shutting_down', 'Agent Manager is stopping');
    }
    if (SCRIPT === null || process.platform !== 'linux') {
      throw unavailable('terminal_unavailable', 'terminals need util-linux `script` (Linux); it was not found');
    }
    if (!this.sandbox.status.enabled) {
      // Without the sandbox a terminal would be a shell on the host beside the person's data.
      throw unavailable(
        'terminal_unavailable',
        `a terminal runs in the agents' sandbox, and agents are not sandboxed here (${this.sandbox.status.reason ?? 'no sandbox'})`,
      );
    }
    if (this.configuration.get('authentication') === 'none') {
      // Then any local process (an agent's forwarded port among them) could open a shell in any working copy.
      throw forbidden('authentication_off', 'terminals need authentication on (authentication: token)');
    }
    // Counted before the first wait: concurrent opens cannot pass the cap together.
    if (this.terminals.size + this.opening >= TERMINALS_MAX) {
      throw conflict('too_many_terminals', `${TERMINALS_MAX} terminals are open; close one first`);
    }
    this.opening++;
    try {
      return await this.openNow(requirementId, rows, cols);
    } finally {
      this.opening--;
    }
  }

  private async openNow(requirementId: string, rows: number, cols: number): Promise<Terminal> {
    const { place, requirement } = await this.worktrees.openPlace(requirementId);
    const id = `term_${randomBytes(8).toString('hex')}`;
    const marker = `${this.markerPrefix}${id}`;
    const tmp = this.sandbox.makeTemporary(id);
    // Not in its TMPDIR: with the run's limits that is a /tmp of its own the manager cannot see.
    const controlDirectory = this.sandbox.makeTemporary(`${id}-ctl`);
    const control = path.join(controlDirectory, 'control.sock');
    let network: RunNetwork | null = null;
    let caps: RunCaps | null = null;
    const release = async () => {
      await this.network.closeRun(id).catch(() => undefined);
      if (caps !== null) {
        await this.limits.close(caps).catch(() => undefined);
      }
      try {
        this.sandbox.removeTemporary(id);
        this.sandbox.removeTemporary(`${id}-ctl`);
      } catch {
        // Left for the next start's sweep of temporary directories.
      }
    };
    try {
      if (Buffer.byteLength(control) > SOCKET_PATH_MAX) {
        throw unavailable(
          'terminal_unavailable',
          `the terminal's control socket would be at ${control}, too long a path for a Unix socket; start Agent Manager with a shorter CODE_FACTORY_HOME`,
        );
      }
      network = await this.network.openRun(
        { id, provider: requirement.provider, requirementId, sessionId: null },
        this.environment.baseEnvironment(requirement.provider),
        () => undefined,
      );
      if (this.shuttingDown) {
        throw unavailable('shutting_down', 'Agent Manager is stopping');
      }
      caps = this.limits.open(marker);
      return this.spawnShell({ caps, control, id, marker, network, place, requirementId, rows, cols, tmp });
    } catch (err) {
      await release();
      throw err;
    }
  }

  private spawnShell(opening: {
    id: string;
    requirementId: string;
    marker: string;
    tmp: string;
    control: string;
    network: RunNetwork;
    caps: RunCaps;
    place: PreviewPlace;
    rows: number;
    cols: number;
  }): Terminal {
    const { caps, control, id, marker, network, place, requirementId, rows, cols, tmp } = opening;
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
    // From PATH's absolute entries only: a relative one would find the agent's `bash` in its copy.
    const absolutePath = (env.PATH ?? '')
      .split(path.delimiter)
      .filter((dir) => path.isAbsolute(dir))
      .join(path.delimiter);
    const shell = findExecutable('bash', absolutePath, '/') ?? '/bin/sh';
    const inner = [process.execPath, TERMINAL_SHELL, control, String(rows), String(cols), '--', shell, '-i'];
    const quoted = inner.map((arg) => `'${arg.replace(/'/g, `'\\''`)}'`).join(' ');
    // `script` gives the helper a pseudo-terminal of its own; its own output is the terminal's.
    const wrapped = this.sandbox.wrap(SCRIPT as string, ['-qfec', quoted, '/dev/null'], {
      caps,
      cwd: place.cwd,
      env,
      git: place.git,
      network: network.sandbox,
      provider: null,
      readOnlyFiles: [],
      shared: [path.dirname(control)],
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
      caps,
      child,
      closing: null,
      cols,
      control,
      createdAt: this.clock.nowIso(),
      detachedSince: this.clock.now().getTime(),
      exitCode: null,
      id,
      lastActivity: this.clock.now().getTime(),
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
    child.stdout?.on('error', () => undefined);
    child.stderr?.on('error', () => undefined);
    this.terminals.set(id, terminal);
    this.logger.log({ msg: 'terminal opened', requirementId, terminalId: id });
    return this.view(terminal);
  }

  /** The page's stream: the scrollback first, then output as it comes; the end when the terminal closes. */
  attach(id: string, req: Request, res: Response): void {
    const terminal = this.find(id);
    if (res.destroyed || req.socket.destroyed) {
      return; // gone before it was attached: nothing to hold open
    }
    res.writeHead(200, {
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'Content-Type': 'text/event-stream; charset=utf-8',
      'X-Accel-Buffering': 'no',
    });
    res.write('retry: 2000\n\n');
    // A page that reconnects clears its screen first: the scrollback is all of it again.
    res.write('event: reset\ndata: {}\n\n');
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
        terminal.detachedSince = this.clock.now().getTime();
      }
    };
    res.on('close', detach);
    req.on('close', detach);
  }

  input(id: string, data: string): void {
    const terminal = this.find(id);
    const stdin = terminal.child.stdin;
    if (stdin && stdin.writableLength > INPUT_BUFFER_MAX) {
      // What runs in front is not reading: input does not pile up in the manager.
      throw conflict('terminal_busy', 'the terminal is not reading its input; wait, or press Ctrl+C');
    }
    terminal.lastActivity = this.clock.now().getTime();
    stdin?.write(data);
  }

  /** Resolves once the terminal has the new size (or the shell helper did not answer in 2 s). */
  resize(id: string, rows: number, cols: number): Promise<void> {
    const terminal = this.find(id);
    terminal.rows = rows;
    terminal.cols = cols;
    if (!isSocketFile(terminal.control)) {
      // The directory is the sandbox's to write: only the helper's own socket is dialled.
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const socket = net.connect(terminal.control);
      const deadline = setTimeout(() => done(), 2000);
      const done = () => {
        clearTimeout(deadline);
        socket.destroy();
        resolve();
      };
      socket.on('error', done);
      socket.on('close', done);
      socket.on('data', (chunk: Buffer) => chunk.includes('\n') && done());
      socket.write(`${rows} ${cols}\n`);
    });
  }

  async remove(id: string): Promise<void> {
    await this.close(this.find(id), 'closed');
  }

  /** A Requirement that ended (done, cancelled, deleted) takes its terminals with it. */
  @OnCommitted(['requirement.cancelled', 'requirement.completed', 'requirement.deleted'])
  async endWithRequirement(events: ManagerEvent[]): Promise<void> {
    const ended = new Set(events.map((event) => event.requirementId));
    await Promise.all(
      [...this.terminals.values()]
        .filter((terminal) => ended.has(terminal.requirementId))
        .map((terminal) => this.close(terminal, 'its Requirement ended')),
    );
  }

  beforeApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    clearInterval(this.sweeper);
    this.unsubscribeClock();
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
    terminal.lastActivity = this.clock.now().getTime();
    const data = frame(chunk);
    for (const res of terminal.streams) {
      if (!res.write(data)) {
        // A page slower than the program: the program waits (the pseudo-terminal holds it back).
        terminal.child.stdout?.pause();
        res.once('drain', () => terminal.child.stdout?.resume());
      }
      if (res.writableLength > STREAM_BUFFER_MAX) {
        res.destroy();
        terminal.child.stdout?.resume();
      }
    }
  }

  /** Closed once: the shell and everything it started, its network, its temporary directory; its pages' streams end. */
  private close(terminal: OpenTerminal, reason: string): Promise<void> {
    terminal.closing ??= (async () => {
      this.terminals.delete(terminal.id);
      await killRunTree(terminal.marker, terminal.child.pid ?? null).catch(() => undefined);
      // A process stuck past SIGKILL (uninterruptible I/O) does not hold the close forever.
      await Promise.race([terminal.exited, new Promise((resolve) => setTimeout(resolve, EXIT_WAIT_MS).unref())]);
      // Each step on its own: one that fails (a folder left unremovable) leaves the rest done, and never throws.
      const steps: Array<() => unknown> = [
        () => this.network.closeRun(terminal.id),
        () => this.limits.close(terminal.caps),
        () => this.sandbox.removeTemporary(terminal.id),
        () => this.sandbox.removeTemporary(`${terminal.id}-ctl`),
      ];
      for (const step of steps) {
        try {
          await step();
        } catch (err) {
          this.logger.warn(`closing terminal ${terminal.id}: ${(err as Error).message}`);
        }
      }
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

  /** Closes the terminals whose page is gone, and the idle ones (no input and no output for 30 minutes). */
  private sweep(): void {
    const now = this.clock.now().getTime();
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
