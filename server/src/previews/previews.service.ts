import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';

import type { EventActor, ManagerEvent, Preview, PreviewOutput, PreviewState } from '@libs/contracts';

import { AgentEnvironmentService } from '../agents/agent-environment.service';
import { AgentSandbox } from '../agents/agent-sandbox';
import { agentVariables } from '../agents/agent-variables';
import { type RunningProcess, runProcess } from '../agents/process-runner';
import { endMarkedWith, killRunTree, workspaceMarkerPrefix } from '../agents/process-tree';
import { type RunCaps, RunLimits } from '../agents/run-limits';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { conflict, unavailable } from '../core/errors/domain-error';
import { git } from '../core/git/git';
import { findPortHolder } from '../core/port-holder';
import { RUNTIME, Runtime } from '../core/runtime';
import { isSocketFile } from '../core/unix-socket';
import { SecretsService } from '../core/secrets/secrets.service';
import { EventLog, SYSTEM_ACTOR } from '../events/event-log.service';
import { OnCommitted } from '../events/on-committed';
import { NetworkService } from '../network/network.service';
import { RequirementsService } from '../requirements/requirements.service';
import { RunsRepository } from '../runs/runs.repository';
import { WorktreesService } from '../worktrees/worktrees.service';

/** Output lines kept per preview (GET …/preview/output), and shown in its status. */
const KEPT_LINES = 5000;
const STATUS_LINES = 20;
/** A line longer than this is cut (a minified bundle printed whole). */
const LINE_MAX = 2000;
/** Output is published at most this often, at most this many lines an event (the rest: GET …/output). */
const PUBLISH_MS = 500;
const PUBLISH_LINES_MAX = 200;
/** How often readiness is asked while starting. */
const READY_POLL_MS = 150;
/** The run script read from the person's base: at most this large. */
const SCRIPT_MAX_BYTES = 256 * 1024;
/** Ended previews remembered (their state and output) at most; older ones are forgotten. */
const ENDED_KEPT = 20;
/** A preview runs as long as it is left to: no output for this long does not end it (the timer's maximum). */
const NO_INACTIVITY_LIMIT_MS = 2_000_000_000;
/** Output one preview publishes as events at most (the rest is kept for GET …/output only). */
const PUBLISHED_BYTES_MAX = 512 * 1024;

interface PreviewEntry {
  requirementId: string;
  /** Its network's and temporary directory's id, and (prefixed) its processes' marker. */
  id: string;
  marker: string;
  state: PreviewState;
  command: string;
  ports: { first: number; count: number };
  url: string;
  pid: number | null;
  startedAt: string;
  endedAt: string | null;
  exitCode: number | null;
  reason: string | null;
  lines: string[];
  dropped: number;
  /** Lines not yet published. */
  pending: string[];
  unpublished: number;
  /** The host's loopback listeners that serve its ports from its namespace. */
  listeners: net.Server[];
  exposeSocket: string | null;
  process: RunningProcess | null;
  caps: RunCaps | null;
  tmp: string;
  readyPattern: RegExp | null;
  /** Set once its end began (a stop, an exit): resources are released once. */
  ending: Promise<void> | null;
  /** The ports served on the host, and the connections through them (ended with it). */
  served: Set<number>;
  sockets: Set<net.Socket>;
  /** Output published as events so far (bounded: the durable log is not its store). */
  publishedBytes: number;
  publishTimer: NodeJS.Timeout | null;
}

const ENDED_REQUIREMENT = ['requirement.cancelled', 'requirement.completed', 'requirement.deleted'] as const;

/**
 * A Requirement's preview (issue 48 §2): its run script (the configured `runCommand`, else
 * `.agent-manager/run` as the person's base branch has it, never the agent's) started in its
 * working copy, in the same sandbox, limits and network rules as its agent. With a network of its
 * own the preview's ports exist only in its namespace: the host's loopback ports are served from
 * there through the relay's expose socket, and its agent's runs reach them through their proxy.
 *
 * Previews live in memory: they end with their Requirement, with the manager, and a manager
 * killed outright leaves processes the next start's sweep ends (found by their marker).
 */
@Injectable()
export class PreviewsService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Previews');
  private readonly previews = new Map<string, PreviewEntry>();
  /** This workspace's preview markers start with it (another workspace's previews are not ours to sweep). */
  private readonly markerPrefix: string;
  private shuttingDown = false;
  /**
   * Starts, stops and ends with a Requirement one at a time (all Requirements: starts are rare, and
   * `maxPreviews` counts them all): a stop that arrives while a start acquires ports, a network
   * and processes waits for it, and then ends all of it.
   */
  private serial: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly environment: AgentEnvironmentService,
    private readonly events: EventLog,
    private readonly limits: RunLimits,
    private readonly network: NetworkService,
    private readonly requirements: RequirementsService,
    private readonly runs: RunsRepository,
    private readonly sandbox: AgentSandbox,
    private readonly secrets: SecretsService,
    private readonly worktrees: WorktreesService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {
    this.markerPrefix = workspaceMarkerPrefix('preview', runtime.paths.home, runtime.paths.root);
  }

  /** What a manager killed outright left running: ended before anything new starts. */
  async onModuleInit(): Promise<void> {
    const orphans = await endMarkedWith(this.markerPrefix);
    if (orphans > 0) {
      this.logger.warn(`ended ${orphans} preview(s) a previous manager left running`);
    }
    fs.rmSync(path.join(this.runtime.paths.dataDirectory, 'previews'), { force: true, recursive: true });
  }

  async onApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    await this.serially(() =>
      Promise.all(
        [...this.previews.values()].map((entry) => this.end(entry, 'stopped', 'Agent Manager stopped', false)),
      ),
    );
  }

  private serially<T>(body: () => Promise<T>): Promise<T> {
    const result = this.serial.then(body, body);
    this.serial = result.catch(() => undefined);
    return result;
  }

  /** The Requirement's preview now; `stopped` with nothing else when it never had one. */
  async status(requirementId: string): Promise<Preview> {
    const entry = this.previews.get(requirementId);
    if (entry) {
      return this.view(entry);
    }
    await this.requirements.get(requirementId);
    const place = await this.worktrees.previewPlace(requirementId);
    return {
      command: null,
      endedAt: null,
      exitCode: null,
      lastLines: [],
      pid: null,
      ports: place?.ports ?? null,
      reason: null,
      requirementId,
      startedAt: null,
      state: 'stopped',
      url: null,
    };
  }

  async output(requirementId: string): Promise<PreviewOutput> {
    const entry = this.previews.get(requirementId);
    if (!entry) {
      await this.requirements.get(requirementId);
      return { dropped: 0, lines: [], requirementId };
    }
    return { dropped: entry.dropped, lines: [...entry.lines], requirementId };
  }

  /**
   * Starts the Requirement's preview (restarts it when one runs). Refused with 409 `no_worktree`
   * without a working copy, `no_run_script` without a script, `runs_on_other_runner` for another
   * runner's Requirement, `too_many_previews` when `maxPreviews` run and none may be stopped.
   */
  start(requirementId: string, actor: EventActor): Promise<Preview> {
    return this.serially(() => this.startNow(requirementId, actor));
  }

  private async startNow(requirementId: string, actor: EventActor): Promise<Preview> {
    if (this.shuttingDown) {
      throw unavailable('shutting_down', 'Agent Manager is stopping');
    }
    const { place, requirement } = await this.worktrees.openPlace(requirementId);
    const script = await this.runScript(place.script);
    const previous = this.previews.get(requirementId);
    if (previous) {
      // One that just exited by itself may still be publishing its end: that comes first.
      await this.end(previous, 'stopped', 'restarted', true);
    }
    await this.makeRoom(requirementId, actor);
    const id = `prv_${randomBytes(8).toString('hex')}`;
    const pattern = this.configuration.get('readyPattern');
    const entry: PreviewEntry = {
      caps: null,
      command: this.secrets.mask(script.shown),
      dropped: 0,
      endedAt: null,
      ending: null,
      exitCode: null,
      exposeSocket: null,
      id,
      lines: [],
      listeners: [],
      marker: `${this.markerPrefix}${id}`,
      pending: [],
      pid: null,
      publishedBytes: 0,
      served: new Set(),
      sockets: new Set(),
      ports: place.ports,
      process: null,
      publishTimer: null,
      readyPattern: pattern === null ? null : new RegExp(pattern),
      reason: null,
      requirementId,
      startedAt: this.clock.nowIso(),
      state: 'starting',
      tmp: this.sandbox.makeTemporary(id),
      unpublished: 0,
      url: `http://127.0.0.1:${place.ports.first}${this.configuration.get('previewPath') ?? ''}`,
    };
    this.previews.set(requirementId, entry);
    this.forgetOldEnded();
    // In the data directory (hidden from every sandbox), bound back read-only for this one: the
    // run's /tmp may be a tmpfs of its own, and the agent must not rewrite what the person runs.
    const scriptFile = this.scriptFile(entry);
    try {
      fs.mkdirSync(path.dirname(scriptFile), { mode: 0o700, recursive: true });
      fs.writeFileSync(scriptFile, script.text, { mode: 0o600 });
      const network = await this.network.openRun(
        { id, provider: requirement.provider, requirementId, sessionId: null },
        this.environment.baseEnvironment(requirement.provider),
        (blocked) =>
          this.addLines(entry, [
            `[Agent Manager: network ${blocked.method} ${blocked.host}:${blocked.port} blocked: ${blocked.reason}]`,
          ]),
        { expose: portList(place.ports) },
      );
      const exposed = network.sandbox.kind === 'proxy' ? (network.sandbox.expose ?? null) : null;
      entry.exposeSocket = exposed?.socketPath ?? null;
      const named = actor.kind !== 'agent';
      const taken = exposed
        ? await this.serve(entry, exposed.ports, named)
        : await firstPortTaken(place.ports.first, named ? (port) => this.holder(port) : () => null);
      if (taken !== null) {
        await this.end(entry, 'exited', taken, true);
        return this.view(entry);
      }
      if (exposed) {
        // Only the ports served: one another program holds on the host stays out of the agent's reach.
        this.network.previewServing(requirementId, [...entry.served]);
      }
      entry.caps = this.limits.open(entry.marker);
      const secrets = this.secrets.previewEnvironment();
      const env: Record<string, string> = {
        ...agentVariables(
          process.env,
          this.configuration.get('agentEnvironmentPass'),
          'none',
          Object.keys(this.secrets.environment()),
        ),
        ...place.env,
        ...network.env,
        ...secrets,
        TMPDIR: entry.tmp,
      };
      // The script's errors are its output too; the sandbox's own (bwrap, the relay) stay apart.
      const wrapped = this.sandbox.wrap('/bin/sh', ['-c', 'exec 2>&1; exec /bin/sh "$0"', scriptFile], {
        caps: entry.caps,
        cwd: place.cwd,
        env,
        git: place.git,
        network: network.sandbox,
        provider: null,
        readOnlyFiles: [scriptFile],
        tmp: entry.tmp,
        workTree: place.workTree,
      });
      const started = await runProcess({
        args: wrapped.args,
        command: wrapped.command,
        cwd: place.cwd,
        env,
        inactivityTimeoutMs: NO_INACTIVITY_LIMIT_MS,
        marker: entry.marker,
        maxLineBytes: LINE_MAX * 4,
        onLine: (line) => this.addLines(entry, [line]),
        stdin: '',
      });
      entry.process = started;
      entry.pid = started.pid;
      void started.finished.then((end): void => {
        if (entry.ending === null) {
          const said = end.stderr.trim().split('\n').slice(-3).join(' | ');
          const reason =
            end.reason === 'spawn_failed'
              ? `could not start: ${said || 'spawn failed'}`
              : end.code === null
                ? `was killed (${end.signal ?? 'signal'})`
                : `exited with ${end.code}${said ? `: ${said}` : ''}`;
          entry.exitCode = end.code;
          void this.end(entry, 'exited', `${script.shown} ${reason}`, true);
        }
      });
    } catch (err) {
      await this.end(entry, 'exited', `could not start: ${(err as Error).message}`, true);
      throw err;
    }
    this.logger.log({ actor: actor.id, msg: 'preview started', ports: place.ports, requirementId });
    void this.watchReady(entry);
    await this.publish(entry, actor).catch((err: unknown) =>
      this.logger.warn(`could not publish the preview of ${requirementId}: ${(err as Error).message}`),
    );
    return this.view(entry);
  }

  /** Stops the Requirement's preview and its whole process tree; a stopped or absent one is left as it is. */
  stop(requirementId: string, actor: EventActor): Promise<Preview> {
    return this.serially(async () => {
      const entry = this.previews.get(requirementId);
      if (!entry) {
        return this.status(requirementId);
      }
      await this.end(entry, 'stopped', null, true, actor);
      return this.view(entry);
    });
  }

  /** A Requirement that ended (done, cancelled, deleted) takes its preview with it. */
  @OnCommitted([...ENDED_REQUIREMENT])
  endWithRequirement(events: ManagerEvent[]): Promise<void> {
    return this.serially(async () => {
      for (const event of events) {
        const entry = event.requirementId === null ? undefined : this.previews.get(event.requirementId);
        if (entry && entry.ending === null) {
          await this.end(entry, 'stopped', `the Requirement was ${event.type.split('.')[1]}`, true);
        }
      }
    });
  }

  /** The run script: the configured command, else `.agent-manager/run` as the person's base has it. */
  private async runScript(
    source: { repository: string; ref: string } | null,
  ): Promise<{ shown: string; text: string }> {
    const configured = this.configuration.get('runCommand');
    if (configured !== null) {
      return { shown: configured, text: `${configured}\n` };
    }
    const missing = conflict(
      'no_run_script',
      'nothing to run: set runCommand in the configuration, or commit .agent-manager/run to your base branch',
    );
    if (source === null || source.ref.startsWith('-')) {
      throw missing;
    }
    // The base branch by its full name: a tag or another ref of that short name is not it.
    const refs = source.ref === 'HEAD' ? ['HEAD'] : [`refs/heads/${source.ref}`, `refs/remotes/${source.ref}`];
    for (const ref of refs) {
      try {
        const found = await git(['cat-file', 'blob', `${ref}:.agent-manager/run`], {
          cwd: source.repository,
          maxBytes: SCRIPT_MAX_BYTES,
          timeoutMs: 10_000,
        });
        return { shown: '.agent-manager/run', text: found.stdout };
      } catch {
        // Not under this name, or no script there: the next name, else nothing to run.
      }
    }
    throw missing;
  }

  /**
   * Past `maxPreviews`, the oldest running preview whose Requirement has no agent running is
   * stopped, with a line saying why; when every one has, the start is refused.
   */
  private async makeRoom(requirementId: string, actor: EventActor): Promise<void> {
    const max = this.configuration.get('maxPreviews');
    const running = [...this.previews.values()]
      .filter((entry) => entry.ending === null && entry.requirementId !== requirementId)
      .sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    if (running.length < max) {
      return;
    }
    const busy = new Set((await this.runs.withStatus('running')).map((run) => run.requirementId));
    // An agent never stops another Requirement's preview: only the person makes room.
    const idle = actor.kind === 'agent' ? [] : running.filter((entry) => !busy.has(entry.requirementId));
    const excess = running.length - max + 1;
    if (idle.length < excess) {
      throw conflict(
        'too_many_previews',
        actor.kind === 'agent'
          ? `${running.length} previews run (maxPreviews ${max}); ask the person to stop one`
          : `${running.length} previews run (maxPreviews ${max}) and every one's agent is running; stop one first`,
      );
    }
    for (const entry of idle.slice(0, excess)) {
      await this.end(
        entry,
        'stopped',
        `stopped to make room for Requirement ${requirementId}'s preview (maxPreviews ${max})`,
        true,
      );
    }
  }

  /**
   * Serves the preview's ports on the host's loopback from its namespace. Returns why it cannot
   * start (its first port is another program's), or null; a later port that is taken is left out, said.
   */
  private async serve(entry: PreviewEntry, ports: number[], named: boolean): Promise<string | null> {
    for (const port of ports) {
      const server = net.createServer((client) => this.relay(entry, port, client));
      const error = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
        server.once('error', resolve);
        server.listen(port, '127.0.0.1', () => resolve(null));
      });
      if (error === null) {
        entry.listeners.push(server);
        entry.served.add(port);
        continue;
      }
      // Which program it is, for the person (an agent learns nothing of the host's processes).
      const holder = error.code === 'EADDRINUSE' ? ((named ? this.holder(port) : null) ?? 'another program') : null;
      const why =
        holder === null
          ? `port ${port} cannot be served (${error.code ?? error.message})`
          : `port ${port} is in use by ${holder}`;
      if (port === entry.ports.first) {
        return why;
      }
      this.addLines(entry, [`[Agent Manager: ${why}; the preview's own port ${port} is not served]`]);
    }
    return null;
  }

  /** One connection to a served port: through the expose socket to the same port inside. */
  private relay(entry: PreviewEntry, port: number, client: net.Socket): void {
    if (entry.exposeSocket === null) {
      client.destroy();
      return;
    }
    if (!isSocketFile(entry.exposeSocket)) {
      // The directory is the sandbox's to write: only the relay's own socket is dialled.
      client.destroy();
      return;
    }
    client.pause();
    const inside = net.connect(entry.exposeSocket);
    entry.sockets.add(client);
    entry.sockets.add(inside);
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\n');
      if (end === -1) {
        if (head.length > 64) {
          inside.destroy();
          client.destroy();
        }
        return;
      }
      inside.off('data', onData);
      if (head.slice(0, end) !== 'OK') {
        // Nothing listens there yet: the client sees the connection refused, as it would be.
        inside.destroy();
        client.destroy();
        return;
      }
      const rest = Buffer.from(head.slice(end + 1), 'latin1');
      if (rest.length > 0) {
        client.write(rest);
      }
      client.pipe(inside);
      inside.pipe(client);
      client.resume();
    };
    inside.on('data', onData);
    inside.on('error', () => client.destroy());
    client.on('error', () => inside.destroy());
    inside.on('close', () => {
      entry.sockets.delete(inside);
      client.destroy();
    });
    client.on('close', () => {
      entry.sockets.delete(client);
      inside.destroy();
    });
    inside.write(`${port}\n`);
  }

  /** Starting until its first port answers (or a line matches `readyPattern`), then ready. */
  private async watchReady(entry: PreviewEntry): Promise<void> {
    while (entry.state === 'starting' && entry.ending === null) {
      if (entry.readyPattern === null && (await this.answers(entry))) {
        if (entry.state === 'starting' && entry.ending === null) {
          entry.state = 'ready';
          await this.publish(entry).catch(() => undefined);
        }
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
    }
  }

  /** Whether something accepts connections on the preview's first port (inside its namespace when it has one). */
  private answers(entry: PreviewEntry): Promise<boolean> {
    if (entry.exposeSocket !== null && !isSocketFile(entry.exposeSocket)) {
      return Promise.resolve(false);
    }
    return new Promise((resolve) => {
      const socket =
        entry.exposeSocket === null ? net.connect(entry.ports.first, '127.0.0.1') : net.connect(entry.exposeSocket);
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(2000, () => done(false));
      socket.once('error', () => done(false));
      if (entry.exposeSocket === null) {
        socket.once('connect', () => done(true));
        return;
      }
      let head = '';
      socket.once('connect', () => socket.write(`${entry.ports.first}\n`));
      socket.on('data', (chunk: Buffer) => {
        head += chunk.toString('latin1');
        if (head.includes('\n')) {
          done(head.startsWith('OK\n'));
        }
      });
      socket.once('close', () => done(false));
    });
  }

  private addLines(entry: PreviewEntry, lines: string[]): void {
    for (const raw of lines) {
      // Kept, published and stored masked: a preview may print a secret it was given.
      const said = this.secrets.any() ? this.secrets.mask(raw) : raw;
      const line = said.length > LINE_MAX ? `${said.slice(0, LINE_MAX)} [cut]` : said;
      entry.lines.push(line);
      if (entry.pending.length < PUBLISH_LINES_MAX && entry.publishedBytes < PUBLISHED_BYTES_MAX) {
        entry.pending.push(line);
        entry.publishedBytes += line.length;
      } else {
        entry.unpublished++;
      }
      if (entry.state === 'starting' && entry.readyPattern?.test(line)) {
        entry.state = 'ready';
        void this.publish(entry).catch(() => undefined);
      }
    }
    if (entry.lines.length > KEPT_LINES) {
      const excess = entry.lines.length - KEPT_LINES;
      entry.lines.splice(0, excess);
      entry.dropped += excess;
    }
    entry.publishTimer ??= setTimeout(() => {
      entry.publishTimer = null;
      void this.publishOutput(entry).catch((err: unknown) =>
        this.logger.warn(`could not publish preview output of ${entry.requirementId}: ${(err as Error).message}`),
      );
    }, PUBLISH_MS);
  }

  private async publishOutput(entry: PreviewEntry): Promise<void> {
    if (entry.pending.length === 0) {
      return;
    }
    const lines = entry.pending;
    if (entry.unpublished > 0) {
      lines.push(
        entry.publishedBytes >= PUBLISHED_BYTES_MAX
          ? `[Agent Manager: ${entry.unpublished} more lines; the event stream carries at most ${PUBLISHED_BYTES_MAX / 1024} KiB of one preview's output, its output (GET …/preview/output) has the last ${KEPT_LINES} lines]`
          : `[Agent Manager: ${entry.unpublished} more lines; the preview's output has them all]`,
      );
    }
    entry.pending = [];
    entry.unpublished = 0;
    await this.database.write((tx) =>
      this.events.append(tx, {
        actor: SYSTEM_ACTOR,
        payload: { lines, requirementId: entry.requirementId },
        requirementId: entry.requirementId,
        type: 'preview.output',
      }),
    );
  }

  private async publish(entry: PreviewEntry, actor: EventActor = SYSTEM_ACTOR): Promise<void> {
    const preview = this.view(entry);
    await this.database.write((tx) =>
      this.events.append(tx, {
        actor,
        payload: { preview },
        requirementId: entry.requirementId,
        type: 'preview.updated',
      }),
    );
  }

  /**
   * Ends a preview once: its whole process tree, its served ports, its network and temporary
   * directory, then says so (`publish`). A second call waits for the first.
   */
  private end(
    entry: PreviewEntry,
    state: 'exited' | 'stopped',
    reason: string | null,
    publish: boolean,
    actor: EventActor = SYSTEM_ACTOR,
  ): Promise<void> {
    entry.ending ??= (async () => {
      entry.state = state;
      entry.reason = reason === null ? null : this.secrets.mask(reason);
      entry.endedAt = this.clock.nowIso();
      if (reason !== null) {
        this.addLines(entry, [
          `[Agent Manager: the preview ${state === 'stopped' ? 'was stopped' : 'ended'}: ${reason}]`,
        ]);
      }
      this.network.previewServing(entry.requirementId, null);
      // Its connections go first (a page's hot-reload socket would hold a listener's close open).
      for (const socket of entry.sockets) {
        socket.destroy();
      }
      const closed = Promise.all(entry.listeners.map((server) => new Promise((resolve) => server.close(resolve))));
      entry.listeners = [];
      await killRunTree(entry.marker, entry.pid).catch((err: unknown) =>
        this.logger.error(`preview of ${entry.requirementId} left processes: ${(err as Error).message}`),
      );
      await entry.process?.finished.catch(() => undefined);
      await closed;
      entry.pid = null;
      // Each step on its own: one that fails (a folder the preview left unremovable) leaves the rest done.
      const steps: Array<() => unknown> = [
        () => (entry.caps === null ? undefined : this.limits.close(entry.caps)),
        () => this.network.closeRun(entry.id),
        () => this.sandbox.removeTemporary(entry.id),
        () => fs.rmSync(this.scriptFile(entry), { force: true }),
      ];
      for (const step of steps) {
        try {
          await step();
        } catch (err) {
          this.logger.warn(`ending the preview of ${entry.requirementId}: ${(err as Error).message}`);
        }
      }
      if (entry.publishTimer !== null) {
        clearTimeout(entry.publishTimer);
        entry.publishTimer = null;
      }
      if (publish) {
        await this.publishOutput(entry).catch(() => undefined);
        await this.publish(entry, actor).catch(() => undefined);
      }
      if (!this.shuttingDown) {
        this.logger.log({ msg: `preview ${state}`, reason, requirementId: entry.requirementId });
      }
    })();
    return entry.ending;
  }

  /** Which program holds a port of this machine, where the OS tells: for the person's answer. */
  private holder(port: number): string | null {
    const found = findPortHolder(port, this.runtime.paths.home);
    if (found?.agentManager) {
      return `another Agent Manager (pid ${found.pid}, ${found.agentManager.url})`;
    }
    return found?.pid == null ? null : `${found.command ?? 'a process'} (pid ${found.pid})`;
  }

  private scriptFile(entry: PreviewEntry): string {
    return path.join(this.runtime.paths.dataDirectory, 'previews', `${entry.id}.sh`);
  }

  private forgetOldEnded(): void {
    const ended = [...this.previews.values()].filter((entry) => entry.ending !== null);
    for (const entry of ended.slice(0, Math.max(0, ended.length - ENDED_KEPT))) {
      this.previews.delete(entry.requirementId);
    }
  }

  private view(entry: PreviewEntry): Preview {
    const running = entry.state === 'starting' || entry.state === 'ready';
    return {
      command: entry.command,
      endedAt: entry.endedAt,
      exitCode: entry.exitCode,
      lastLines: entry.lines.slice(-STATUS_LINES),
      pid: running ? entry.pid : null,
      ports: entry.ports,
      reason: entry.reason,
      requirementId: entry.requirementId,
      startedAt: entry.startedAt,
      state: entry.state,
      url: running ? entry.url : null,
    };
  }
}

function portList(ports: { first: number; count: number }): number[] {
  return Array.from({ length: ports.count }, (_, i) => ports.first + i);
}

/** On the host's network (no namespace of its own): whether another program holds the first port already. */
async function firstPortTaken(port: number, holder: (port: number) => string | null): Promise<string | null> {
  const server = net.createServer();
  const error = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
    server.once('error', resolve);
    server.listen(port, '127.0.0.1', () => resolve(null));
  });
  if (error === null) {
    await new Promise((resolve) => server.close(resolve));
    return null;
  }
  return error.code === 'EADDRINUSE'
    ? `port ${port} is in use by ${holder(port) ?? 'another program'}`
    : `port ${port} cannot be used (${error.code ?? error.message})`;
}
