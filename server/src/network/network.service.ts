import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tls from 'node:tls';

import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';

import type { Provider, EventActor, NetworkBlocked } from '@libs/contracts';

import { AgentEnvironmentService } from '../agents/agent-environment.service';
import { AgentSandbox } from '../agents/agent-sandbox';
import { type SandboxNetwork } from '../agents/sandbox-layout';
import { codexConfigValues } from '../agents/agent-variables';
import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { OnDomainEvent } from '../core/domain-events';
import { invalid, unavailable } from '../core/errors/domain-error';
import { git } from '../core/git/git';
import { newId } from '../core/ids';
import { type HostRule, firstMatch, parseHostRules } from '../core/network/host-rules';
import { RUNTIME, Runtime } from '../core/runtime';
import { SOCKET_PATH_MAX } from '../core/unix-socket';
import { SecretsService } from '../core/secrets/secrets.service';
import { EventLog, SYSTEM_ACTOR } from '../events/event-log.service';
import { RequirementsService } from '../requirements/requirements.service';
import { startPolicy } from '../requirements/start-policies';
import {
  NetworkBlockedListDto,
  NetworkBlockedQueryDto,
  NetworkStatusDto,
  RequirementNetworkDto,
  UpdateRequirementNetworkDto,
  toNetworkBlocked,
} from './dto/network.dto';
import { type BlockedConnection, EgressProxy } from './egress-proxy';
import { defaultAllow } from './network-defaults';
import type { NetworkBlockedEntity } from './network.entities';
import type { NetworkPolicy } from './network-policy';
import { NetworkRepository } from './network.repository';
import { RunCertificates } from './run-certificates';

/** What a run's processes get: their sandbox's network and the variables that point at its proxy. */
export interface RunNetwork {
  sandbox: SandboxNetwork;
  env: Record<string, string>;
}

/** The run whose proxy refused a connection, as the blocked list records it. */
interface BlockingRun {
  id: string;
  requirementId: string;
  sessionId: string | null;
}

interface BlockedRow {
  row: NetworkBlockedEntity;
  written: boolean;
  dirty: boolean;
  /** When an event last said its count (0: never). */
  announcedAt: number;
}

interface OpenProxy {
  proxy: EgressProxy;
  dir: string;
  run: BlockingRun;
  rows: Map<string, BlockedRow>;
}

/** The port the proxy has inside a run's network namespace, unless something forwarded needs it. */
const PROXY_PORT = 3128;
/** Distinct hosts and ports one run's blocked list keeps; past it, refusals are only answered. */
const BLOCKED_ROWS_PER_RUN = 500;
/** How often the blocked counts are written (one unit for all runs), and an event repeats at most. */
const FLUSH_MS = 1000;
const ANNOUNCE_MS = 5000;
/** The defaults (remotes, lock files) are read again after this long. */
const DEFAULTS_TTL_MS = 60_000;

/** The proxy's authority is valid for a year; runs started after 300 days get a new one. */
const AUTHORITY_RENEW_MS = 300 * 24 * 60 * 60 * 1000;
/** Where Debian, Fedora, Alpine and macOS keep the machine's trusted authorities (added to a run's bundle). */
const SYSTEM_BUNDLES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/cert.pem'];
/**
 * The variables through which common clients take the authorities they trust: Node adds
 * NODE_EXTRA_CA_CERTS to its own; the rest replace theirs, so they get a whole bundle.
 */
const BUNDLE_VARIABLES = [
  'SSL_CERT_FILE',
  'CURL_CA_BUNDLE',
  'REQUESTS_CA_BUNDLE',
  'GIT_SSL_CAINFO',
  'PIP_CERT',
  'CARGO_HTTP_CAINFO',
];

/** The model APIs and logins each provider's CLI cannot work without, whatever the mode. */
const PROVIDER_ESSENTIALS: Record<Provider, string[]> = {
  'claude-code': ['api.anthropic.com:443', 'console.anthropic.com:443'],
  codex: ['api.openai.com:443', 'auth.openai.com:443', 'chatgpt.com:443'],
};

/**
 * Each agent run's network (issue 45): in `allow_list` and `offline` modes its processes live in a
 * network namespace of their own whose only way out is an egress proxy this service runs for the
 * run (one per run, on a Unix socket), deciding each connection by the workspace's allow- and
 * deny-lists, the Requirement's own additions, and the essentials (Agent Manager, the model API).
 * What the proxy refuses is counted per run, host and port, written, and published.
 */
@Injectable()
export class NetworkService implements OnApplicationShutdown {
  private readonly logger = new Logger(NetworkService.name);
  private readonly proxies = new Map<string, OpenProxy>();
  /** Each Requirement's own additions, parsed, as last read or written. */
  private readonly requirementRules = new Map<string, HostRule[]>();
  /**
   * The loopback ports of each Requirement's running preview (issue 48 §2): its runs reach them
   * through their proxy (the host's port, served by the preview's relay), for as long as it runs.
   */
  private readonly previewRules = new Map<string, HostRule[]>();
  private defaults: { hosts: string[]; at: number } | null = null;
  private parsed = new Map<string, HostRule[]>();
  /** Proxies closed whose last counts are being written. */
  private readonly closing = new Set<OpenProxy>();
  private flushTimer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly environment: AgentEnvironmentService,
    private readonly events: EventLog,
    private readonly repository: NetworkRepository,
    private readonly requirements: RequirementsService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
    private readonly sandbox: AgentSandbox,
    private readonly secrets: SecretsService,
  ) {}

  /** The authority tunnels opened for a secret's header present; made once, when a run first needs it. */
  private certificates: Promise<RunCertificates> | null = null;
  private certificatesAt = 0;

  async status(): Promise<NetworkStatusDto> {
    const mode = this.configuration.get('networkMode');
    const reason = mode === 'open' ? null : await this.sandbox.networkUnavailable();
    return {
      allow: this.configuration.get('networkAllow'),
      defaults: await this.defaultHosts(),
      deny: this.configuration.get('networkDeny'),
      isolated: mode !== 'open' && reason === null,
      mode,
      unavailableReason: reason,
    };
  }

  /** A start is refused (503) while runs could only go unfiltered: never run open unless the person chose `open`. */
  @OnDomainEvent('requirement.starting', { order: startPolicy('network') })
  async guardStart(): Promise<void> {
    await this.refuseIfUnavailable();
  }

  private async refuseIfUnavailable(): Promise<void> {
    if (this.configuration.get('networkMode') === 'open') {
      return;
    }
    const reason = await this.sandbox.networkUnavailable();
    if (reason !== null) {
      throw unavailable(
        'network_isolation_unavailable',
        `agent runs cannot have a network of their own here: ${reason}. Nothing was started; install bubblewrap with user namespaces, or set networkMode to "open" to let agents reach the whole network`,
      );
    }
  }

  /**
   * Opens the run's network: in `open` mode the host's; otherwise its proxy, listening before any
   * process of the run starts. Throws 503 `network_isolation_unavailable` when the machine cannot
   * give it one (the run then fails: it never runs open by accident). `onFirstBlock` hears the
   * first refusal of each host and port (for the run's trace).
   */
  async openRun(
    run: BlockingRun & { provider: Provider },
    baseEnv: Record<string, string>,
    onFirstBlock: (blocked: BlockedConnection) => void,
    options: {
      /** A preview's own ports, served to the host from inside its namespace (issue 48 §2). */
      expose?: number[];
      /** A prepared working copy's setup (issue 48 §6): no Requirement to count its blocked connections under. */
      unrecorded?: boolean;
    } = {},
  ): Promise<RunNetwork> {
    const expose = options.expose ?? [];
    if (this.configuration.get('networkMode') === 'open') {
      return { env: {}, sandbox: { kind: 'host' } };
    }
    await this.refuseIfUnavailable();
    this.requirementRules.set(run.requirementId, this.rules(await this.repository.allowOf(run.requirementId)));
    const essential = this.rules(this.essentials(run.provider, baseEnv));
    const defaults = this.rules(await this.defaultHosts());
    // Short: a Unix socket's path has room for 107 bytes (the run's id would take 40 of them).
    const dir = path.join(this.sandbox.temporaryRoot, `net-${run.id.replace(/^run_/, '').slice(0, 13)}`);
    // The longest of its sockets' names: a preview's expose socket's.
    const longest = path.join(dir, expose.length > 0 ? 'expose.sock' : 'proxy.sock');
    if (Buffer.byteLength(longest) > SOCKET_PATH_MAX) {
      throw unavailable(
        'network_isolation_unavailable',
        `the run's socket would be at ${longest}, too long a path for a Unix socket; start Agent Manager with a shorter CODE_FACTORY_HOME`,
      );
    }
    fs.mkdirSync(dir, { mode: 0o700, recursive: true });
    const open: OpenProxy = { dir, proxy: null as unknown as EgressProxy, rows: new Map(), run };
    // Only when a secret goes to a host as a header: the run must then trust the proxy's authority.
    const certificates = this.secrets.injections().length > 0 ? await this.authority() : null;
    open.proxy = new EgressProxy({
      certificates,
      // A secret whose host names no port goes to 443 over TLS only: never in clear text, as a
      // plain http:// request (to any port) would send it. One with a port goes to that port.
      inject: (host, port, secure) =>
        this.secrets
          .injections()
          .filter(
            (secret) => secret.host === host && (secret.port === null ? secure && port === 443 : secret.port === port),
          )
          .map(({ header, value }) => ({ header, value })),
      onBlocked: (blocked) => (options.unrecorded ? onFirstBlock(blocked) : this.record(open, blocked, onFirstBlock)),
      policy: () => this.policy(run.requirementId, essential, defaults),
    });
    // Linux: a Unix socket bound into the run's namespace. macOS (Seatbelt, no namespaces): a
    // loopback port the run's profile alone lets it reach.
    const socketPath = this.sandbox.status.mechanism === 'bubblewrap' ? path.join(dir, 'proxy.sock') : null;
    await open.proxy.listen(socketPath ?? 0);
    this.proxies.set(run.id, open);
    // Loopback ports a program may dial directly (not through the proxy variables): Agent Manager's,
    // a loopback model server's, and loopback entries the person wrote with a port. Not a preview's:
    // the run's own servers listen on those ports in its namespace (it reaches the preview through
    // the proxy), nor the ports a preview itself serves.
    const policy = this.policy(run.requirementId, essential, defaults, false);
    const forwardPorts = [
      ...new Set(
        [...policy.essential, ...policy.allow, ...policy.requirementAllow]
          .filter((rule) => rule.port !== null && isLoopback(rule.host) && !expose.includes(rule.port))
          .map((rule) => rule.port as number),
      ),
    ].sort((a, b) => a - b);
    let proxyPort = socketPath === null ? (open.proxy.port() as number) : PROXY_PORT;
    while (socketPath !== null && (forwardPorts.includes(proxyPort) || expose.includes(proxyPort))) {
      proxyPort++;
    }
    const url = `http://127.0.0.1:${proxyPort}`;
    const env: Record<string, string> = { NO_PROXY: '', no_proxy: '' };
    for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY']) {
      env[name] = url;
      env[name.toLowerCase()] = url;
    }
    if (certificates !== null) {
      Object.assign(env, trustFiles(dir, certificates.caPem));
    }
    const exposed =
      socketPath !== null && expose.length > 0
        ? { expose: { ports: expose, socketPath: path.join(dir, 'expose.sock') } }
        : {};
    return { env, sandbox: { forwardPorts, kind: 'proxy', proxyPort, socketPath, ...exposed } };
  }

  /**
   * A Requirement's preview serves `ports` on the host's loopback (null: no longer): its agent
   * runs, open ones included, reach them through their proxy while it does (issue 48 §3).
   */
  previewServing(requirementId: string, ports: number[] | null): void {
    if (ports === null) {
      this.previewRules.delete(requirementId);
    } else {
      this.previewRules.set(requirementId, this.rules(ports.map((port) => `127.0.0.1:${port}`)));
    }
  }

  private authority(): Promise<RunCertificates> {
    // Made again well before its year is up, for the runs that start after (a manager may run that long).
    if (this.certificates !== null && Date.now() - this.certificatesAt > AUTHORITY_RENEW_MS) {
      this.certificates = null;
    }
    if (this.certificates === null) {
      this.certificatesAt = Date.now();
    }
    this.certificates ??= RunCertificates.create().catch((err: unknown) => {
      this.certificates = null;
      throw unavailable(
        'network_isolation_unavailable',
        `the proxy's authority for secret headers could not be made: ${(err as Error).message}`,
      );
    });
    return this.certificates;
  }

  /** The run is over: its proxy goes (its tunnels with it), its blocked counts are written. */
  async closeRun(runId: string): Promise<void> {
    const open = this.proxies.get(runId);
    if (!open) {
      return;
    }
    this.proxies.delete(runId);
    this.closing.add(open);
    await open.proxy.close().catch(() => undefined);
    fs.rmSync(open.dir, { force: true, recursive: true });
    await this.flush();
    this.closing.delete(open);
    if (![...this.proxies.values()].some((other) => other.run.requirementId === open.run.requirementId)) {
      this.requirementRules.delete(open.run.requirementId);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.proxies.keys()].map((id) => this.closeRun(id)));
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
    }
  }

  async blocked(query: NetworkBlockedQueryDto): Promise<NetworkBlockedListDto> {
    await this.flush();
    const since = query.since === undefined ? undefined : new Date(query.since).toISOString();
    const rows = await this.repository.blocked({
      limit: query.limit ?? 200,
      requirementId: query.requirementId,
      since,
    });
    return { items: rows.map(toNetworkBlocked) };
  }

  async requirementNetwork(requirementId: string): Promise<RequirementNetworkDto> {
    await this.requirements.get(requirementId);
    const [allow, blocked] = await Promise.all([
      this.repository.allowOf(requirementId),
      this.blocked({ limit: 200, requirementId }),
    ]);
    return { allow, blocked: blocked.items, requirementId };
  }

  /**
   * What the agent's next prompt says of the network (issue 45 §3): the hosts its Requirement's
   * runs were refused that are still not allowed (ten at most), so that it can ask the person
   * rather than retry; null when there are none, or the mode is open.
   */
  async promptNote(requirementId: string): Promise<string | null> {
    const counts = new Map<string, number>();
    for (const row of await this.stillRefused(requirementId)) {
      const entry = `${row.host.includes(':') ? `[${row.host}]` : row.host}:${row.port}`;
      counts.set(entry, (counts.get(entry) ?? 0) + row.count);
    }
    if (counts.size === 0) {
      return null;
    }
    const listed = [...counts.entries()]
      .slice(0, 10)
      .map(([entry, count]) => `${entry} (×${count})`)
      .join(', ');
    return [
      '## Network',
      `Your runs reach only the hosts the person allows, through a proxy. These were refused and are still not allowed: ${listed}.`,
      'If you need one of them, say so in your answer (which host, and why): only the person can allow it. Do not try to get around the proxy.',
    ].join('\n');
  }

  /**
   * What the Requirement's runs were refused (the latest 200 blocks, most recent first) that is
   * still refused: the mode is offline, a deny names it, or no allow does. Empty in the open mode.
   * `runId` narrows it to one run's blocks.
   */
  async stillRefused(requirementId: string, runId?: string): Promise<NetworkBlocked[]> {
    if (this.configuration.get('networkMode') === 'open') {
      return [];
    }
    const { items } = await this.blocked({ limit: 200, requirementId });
    const allow = [
      ...this.rules(await this.defaultHosts()),
      ...this.rules(this.configuration.get('networkAllow')),
      ...this.rules(await this.repository.allowOf(requirementId)),
    ];
    const deny = this.rules(this.configuration.get('networkDeny'));
    return items.filter(
      (row) =>
        (runId === undefined || row.runId === runId) &&
        (this.configuration.get('networkMode') === 'offline' ||
          firstMatch(deny, row.host, row.port) !== null ||
          firstMatch(allow, row.host, row.port) === null),
    );
  }

  /** The person sets the Requirement's own additions (an agent's credential cannot reach this). */
  async setRequirementAllow(
    requirementId: string,
    dto: UpdateRequirementNetworkDto,
    actor: EventActor,
  ): Promise<RequirementNetworkDto> {
    if (dto.allow === undefined) {
      throw invalid('allow_required', 'allow: the list of hosts this Requirement may reach (an empty list clears it)');
    }
    await this.requirements.get(requirementId);
    const allow = [...new Set(dto.allow.map((entry) => entry.trim()))];
    await this.database.write(async (tx) => {
      await this.repository.setAllow(tx, requirementId, allow, this.clock.nowIso());
      await this.events.append(tx, {
        actor,
        payload: { allow, requirementId },
        requirementId,
        sessionId: null,
        type: 'network.allow_updated',
      });
    });
    this.requirementRules.set(requirementId, this.rules(allow));
    this.logger.log({ actor: actor.id, allow, msg: 'requirement network allow-list changed', requirementId });
    return this.requirementNetwork(requirementId);
  }

  private policy(
    requirementId: string,
    essential: HostRule[],
    defaults: HostRule[],
    withPreview = true,
  ): NetworkPolicy {
    return {
      // A host a secret goes to is one the person named: reachable as if allowed (deny still wins).
      allow: [
        ...defaults,
        ...this.rules(this.configuration.get('networkAllow')),
        ...this.rules(this.secrets.injections().map((secret) => secret.rule)),
      ],
      deny: this.rules(this.configuration.get('networkDeny')),
      essential,
      mode: this.configuration.get('networkMode'),
      requirementAllow: [
        ...(this.requirementRules.get(requirementId) ?? []),
        ...((withPreview && this.previewRules.get(requirementId)) || []),
      ],
    };
  }

  /** Parsed once per distinct list (configuration changes make a new one). Invalid entries were refused on the way in. */
  private rules(entries: readonly string[]): HostRule[] {
    const key = entries.join('\n');
    let rules = this.parsed.get(key);
    if (!rules) {
      rules = parseHostRules(entries).rules;
      if (this.parsed.size > 100) {
        this.parsed.clear();
      }
      this.parsed.set(key, rules);
    }
    return rules;
  }

  /** Agent Manager itself and the model API the CLI is configured for: reachable in every mode. */
  private essentials(provider: Provider, env: Record<string, string>): string[] {
    const hosts = [...PROVIDER_ESSENTIALS[provider]];
    const urls = [this.environment.apiUrl];
    if (provider === 'codex') {
      urls.push(env.OPENAI_BASE_URL ?? '', ...codexConfigValues(env, 'base_url'));
    } else {
      urls.push(env.ANTHROPIC_BASE_URL ?? '');
    }
    for (const url of urls) {
      const authority = authorityOf(url);
      if (authority) {
        hosts.push(authority);
      }
    }
    return hosts;
  }

  private async defaultHosts(): Promise<string[]> {
    if (this.defaults && Date.now() - this.defaults.at < DEFAULTS_TTL_MS) {
      return this.defaults.hosts;
    }
    let remoteUrls: string[] = [];
    try {
      const listed = await git(['config', '--get-regexp', '^remote\\..*\\.url$'], {
        cwd: this.runtime.paths.root,
        timeoutMs: 5000,
      });
      remoteUrls = listed.stdout
        .split('\n')
        .map((line) => line.split(' ').slice(1).join(' ').trim())
        .filter(Boolean);
    } catch {
      // No repository or no remote: no hosts from it.
    }
    const hosts = defaultAllow({
      githubApiUrl: this.configuration.get('githubApiUrl'),
      remoteUrls,
      workspaceRoot: this.runtime.paths.root,
    });
    this.defaults = { at: Date.now(), hosts };
    return hosts;
  }

  private record(open: OpenProxy, blocked: BlockedConnection, onFirstBlock: (b: BlockedConnection) => void): void {
    const key = `${blocked.host}\n${blocked.port}`;
    const now = this.clock.nowIso();
    const known = open.rows.get(key);
    if (known) {
      known.row.count++;
      known.row.lastAt = now;
      known.row.reason = blocked.reason;
      known.dirty = true;
    } else {
      if (open.rows.size >= BLOCKED_ROWS_PER_RUN) {
        return;
      }
      open.rows.set(key, {
        announcedAt: 0,
        dirty: true,
        row: {
          count: 1,
          firstAt: now,
          host: blocked.host.slice(0, 255),
          id: newId('networkBlocked'),
          lastAt: now,
          method: blocked.method.slice(0, 20),
          port: blocked.port,
          reason: blocked.reason.slice(0, 1000),
          requirementId: open.run.requirementId,
          runId: open.run.id,
        },
        written: false,
      });
      onFirstBlock(blocked);
    }
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = null;
      void this.flush();
    }, FLUSH_MS);
  }

  /** Writes every changed count in one unit, with an event for the new ones and, every few seconds, the growing ones. */
  private flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      const now = Date.now();
      const due: { open: OpenProxy; entry: BlockedRow; announce: boolean }[] = [];
      for (const open of this.allOpen()) {
        for (const entry of open.rows.values()) {
          if (entry.dirty) {
            due.push({ announce: now - entry.announcedAt >= ANNOUNCE_MS, entry, open });
            entry.dirty = false;
          }
        }
      }
      if (due.length === 0) {
        return;
      }
      try {
        await this.database.write(async (tx) => {
          for (const { entry, open, announce } of due) {
            if (entry.written) {
              this.repository.updateBlocked(tx, entry.row.id, { count: entry.row.count, lastAt: entry.row.lastAt });
            } else {
              this.repository.insertBlocked(tx, { ...entry.row });
            }
            if (announce) {
              await this.events.append(tx, {
                actor: SYSTEM_ACTOR,
                payload: { blocked: toNetworkBlocked(entry.row) },
                requirementId: open.run.requirementId,
                runId: open.run.id,
                sessionId: open.run.sessionId,
                type: 'network.blocked',
              });
            }
          }
        });
        for (const { entry, announce } of due) {
          entry.written = true;
          if (announce) {
            entry.announcedAt = now;
          }
        }
      } catch (err) {
        // A Requirement deleted meanwhile, a store gone: the refusals were answered all the same.
        this.logger.warn(`could not record blocked connections: ${(err as Error).message}`);
      }
    });
    return this.flushing;
  }

  /** Open proxies, and those closing whose counts are not written yet. */
  private *allOpen(): Iterable<OpenProxy> {
    yield* this.proxies.values();
    yield* this.closing;
  }
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

/** `host:port` of an http(s) URL (the scheme's port when none is written), or null. */
function authorityOf(url: string): string | null {
  if (!url) {
    return null;
  }
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      return null;
    }
    const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
    return `${parsed.hostname}:${port}`;
  } catch {
    return null;
  }
}

/**
 * Writes the run's trust files beside its proxy socket (bound into its sandbox): the proxy's
 * authority alone, and a bundle of it with Node's and the machine's authorities; returns the
 * variables that point clients at them.
 */
function trustFiles(dir: string, caPem: string): Record<string, string> {
  const own = path.join(dir, 'proxy-ca.pem');
  const bundle = path.join(dir, 'ca-bundle.pem');
  const system = SYSTEM_BUNDLES.map((file) => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  }).find((text) => text !== '');
  // Authorities the person's Node already added (a company's TLS inspection) stay trusted.
  let extra = '';
  try {
    extra = process.env.NODE_EXTRA_CA_CERTS ? fs.readFileSync(process.env.NODE_EXTRA_CA_CERTS, 'utf8') : '';
  } catch {
    // Unreadable: Node itself warns about it; the run trusts the proxy's alone.
  }
  fs.writeFileSync(own, [caPem, extra].join('\n'), { mode: 0o644 });
  fs.writeFileSync(bundle, [system ?? tls.rootCertificates.join('\n'), extra, caPem].join('\n'), { mode: 0o644 });
  return {
    NODE_EXTRA_CA_CERTS: own,
    ...Object.fromEntries(BUNDLE_VARIABLES.map((name) => [name, bundle])),
  };
}
