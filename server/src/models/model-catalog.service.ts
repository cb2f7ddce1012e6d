import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { Subscription } from 'rxjs';

import {
  type CatalogModel,
  type EventActor,
  type ModelCatalog,
  type ModelCatalogProvider,
  PROVIDERS,
  type Provider,
  REASONING_EFFORTS,
  type ReasoningEffort,
  type RequirementWarning,
} from '@libs/contracts';

import { Clock } from '../core/clock';
import { ConfigurationService } from '../core/configuration/configuration.service';
import { Database } from '../core/database/database.service';
import { RUNTIME, Runtime } from '../core/runtime';
import { EventLog, SYSTEM_ACTOR } from '../events/event-log.service';
import { catalogEnvironment } from '../agents/agent-environment.service';
import { listAnthropicModels } from './anthropic-model-list';
import { listCodexModels } from './codex-model-list';
import { CLAUDE_CODE_EFFORTS, claudeAliasModels, codexBuiltinModels } from './known-models';
import type { ModelCatalogSourceEntity } from './model-catalog-source.entity';
import { ModelCatalogRepository } from './model-catalog.repository';

/** How long one source may take to answer before its refresh counts as failed. */
const SOURCE_TIMEOUT_MS = 20_000;
const HOUR_MS = 60 * 60 * 1000;

/**
 * The models and reasoning efforts each provider accepts (issue 17 §4): Codex's own listing,
 * Claude Code's aliases plus the Anthropic models endpoint, and the configuration's extra
 * models. Each provider's last good listing is persisted, so a source that fails (or a start
 * without network) serves it again, flagged stale with the error; a provider never listed
 * serves the built-in list. Every refresh and every change of the extra models publishes
 * `model_catalog.updated` with the whole catalog.
 */
@Injectable()
export class ModelCatalogService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ModelCatalogService.name);
  /** The persisted rows as committed: what every read is built from. */
  private rows = new Map<Provider, ModelCatalogSourceEntity>();
  private loading: Promise<void> | null = null;
  private refreshing: Promise<ModelCatalog> | null = null;
  private subscription: Subscription | undefined;
  /** Ends a listing still running at shutdown (its process is in a group of its own). */
  private readonly shutdown = new AbortController();

  constructor(
    private readonly clock: Clock,
    private readonly configuration: ConfigurationService,
    private readonly database: Database,
    private readonly events: EventLog,
    private readonly repository: ModelCatalogRepository,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.load();
    let extras = this.extraModelsKey();
    this.subscription = this.configuration.changes$.subscribe(() => {
      const next = this.extraModelsKey();
      if (next !== extras) {
        extras = next;
        void this.announce(SYSTEM_ACTOR).catch((error: unknown) =>
          this.logger.warn({ err: String(error), msg: 'model catalog announcement failed' }),
        );
      }
    });
  }

  /** Ends a listing in flight and waits for it: nothing of the catalog outlives the close. */
  async onModuleDestroy(): Promise<void> {
    this.subscription?.unsubscribe();
    this.shutdown.abort();
    await this.refreshing?.catch(() => undefined);
  }

  /** The manager is closing: a refresh that fails now failed because of that. */
  get stopping(): boolean {
    return this.shutdown.signal.aborted;
  }

  /** The catalog, or one provider's part of it. */
  async snapshot(provider?: Provider): Promise<ModelCatalog> {
    await this.load();
    const catalog = this.build();
    return provider ? restrict(catalog, provider) : catalog;
  }

  /**
   * Asks every source again, persists what they answered (a failing one keeps its last good
   * listing and records the error) and publishes the new catalog. One refresh at a time: a
   * call while one runs gets that one's result.
   */
  refresh(actor: EventActor): Promise<ModelCatalog> {
    if (!this.refreshing) {
      this.refreshing = this.runRefresh(actor).finally(() => {
        this.refreshing = null;
      });
    }
    return this.refreshing;
  }

  /**
   * Whether the automatic refresh is due: `modelCatalogRefreshHours` since the last attempt, or
   * an hour after a failed one (a source that was down is asked again soon). Never when 0.
   */
  async refreshIsDue(): Promise<boolean> {
    const hours = this.configuration.get('modelCatalogRefreshHours');
    if (hours === 0) {
      return false;
    }
    await this.load();
    const now = this.clock.now().getTime();
    return PROVIDERS.some((provider) => {
      const row = this.rows.get(provider);
      const attempted = row?.attemptedAt ? Date.parse(row.attemptedAt) : null;
      if (attempted === null) {
        return true;
      }
      return now - attempted >= (row?.error ? Math.min(hours, 1) : hours) * HOUR_MS;
    });
  }

  /**
   * What a Requirement's create or edit response flags (it is never refused for it): a model
   * the catalog does not list for the provider, or an effort the catalog does not list for it.
   */
  async warningsFor(
    provider: Provider,
    model: string | null,
    effort: ReasoningEffort | null,
  ): Promise<RequirementWarning[]> {
    if (model === null) {
      return [];
    }
    const entry = (await this.snapshot(provider)).items.find((item) => item.id === model);
    if (!entry) {
      return ['unknown_model'];
    }
    return effort !== null && !entry.efforts.includes(effort) ? ['unsupported_reasoning_effort'] : [];
  }

  private load(): Promise<void> {
    this.loading ??= this.repository.list().then((rows) => {
      this.rows = new Map(rows.map((row) => [row.provider, row]));
    });
    return this.loading;
  }

  private async runRefresh(actor: EventActor): Promise<ModelCatalog> {
    await this.load();
    const env = catalogEnvironment(this.runtime.env);
    const [codex, claude] = await Promise.allSettled([
      listCodexModels({
        cwd: this.runtime.paths.root,
        env,
        executable: this.configuration.get('codexExecutable'),
        signal: this.shutdown.signal,
        timeoutMs: SOURCE_TIMEOUT_MS,
      }),
      listAnthropicModels({ env, signal: this.shutdown.signal, timeoutMs: SOURCE_TIMEOUT_MS }),
    ]);
    const now = this.clock.nowIso();
    const next = new Map(this.rows);
    next.set('codex', this.outcome('codex', codex, now));
    // No credential in the environment is no failure: Claude Code then offers its aliases only.
    next.set(
      'claude-code',
      this.outcome(
        'claude-code',
        claude.status === 'fulfilled' ? { status: 'fulfilled', value: claude.value ?? [] } : claude,
        now,
      ),
    );
    for (const [provider, result] of [
      ['codex', codex],
      ['claude-code', claude],
    ] as const) {
      if (result.status === 'rejected') {
        this.logger.warn({
          err: errorText(result.reason),
          msg: 'model listing failed; the last one is served, flagged stale',
          provider,
        });
      }
    }
    const catalog = await this.database.write(async (uow) => {
      for (const row of next.values()) {
        this.repository.save(uow, row);
      }
      const built = this.build(next);
      await this.events.append(uow, { actor, payload: { catalog: built }, type: 'model_catalog.updated' });
      return built;
    });
    this.rows = next;
    return catalog;
  }

  private outcome(
    provider: Provider,
    result: PromiseSettledResult<CatalogModel[]>,
    now: string,
  ): ModelCatalogSourceEntity {
    const previous = this.rows.get(provider);
    if (result.status === 'fulfilled') {
      return { attemptedAt: now, error: null, models: JSON.stringify(result.value), provider, refreshedAt: now };
    }
    return {
      attemptedAt: now,
      error: errorText(result.reason),
      models: previous?.models ?? '[]',
      provider,
      refreshedAt: previous?.refreshedAt ?? null,
    };
  }

  /** Publishes the catalog as it is now (the extra models changed). */
  private async announce(actor: EventActor): Promise<void> {
    await this.load();
    await this.database.write(async (uow) => {
      await this.events.append(uow, { actor, payload: { catalog: this.build() }, type: 'model_catalog.updated' });
    });
  }

  private extraModelsKey(): string {
    return JSON.stringify([this.configuration.get('extraCodexModels'), this.configuration.get('extraClaudeModels')]);
  }

  private build(rows = this.rows): ModelCatalog {
    const providers: ModelCatalogProvider[] = [];
    const items: CatalogModel[] = [];
    for (const provider of PROVIDERS) {
      const row = rows.get(provider);
      const refreshedAt = row?.refreshedAt ?? null;
      const listed = refreshedAt === null ? [] : (JSON.parse(row?.models ?? '[]') as CatalogModel[]);
      const extras = this.configuration.get(provider === 'codex' ? 'extraCodexModels' : 'extraClaudeModels');
      const efforts = provider === 'codex' ? [...REASONING_EFFORTS] : [...CLAUDE_CODE_EFFORTS];
      const entries = [
        ...(provider === 'claude-code' ? claudeAliasModels() : refreshedAt === null ? codexBuiltinModels() : []),
        ...listed,
        ...extras.map((id): CatalogModel => ({ efforts, id, label: id, provider, source: 'configuration' })),
      ];
      const seen = new Set<string>();
      items.push(...entries.filter((entry) => !seen.has(entry.id) && seen.add(entry.id)));
      providers.push({
        attemptedAt: row?.attemptedAt ?? null,
        error: row?.error ?? null,
        provider,
        refreshedAt,
        stale: refreshedAt === null || (row?.error ?? null) !== null,
      });
    }
    return summarize(items, providers);
  }
}

function summarize(items: CatalogModel[], providers: ModelCatalogProvider[]): ModelCatalog {
  const times = providers.map((p) => p.refreshedAt);
  const refreshedAt = times.some((t) => t === null) ? null : ([...times].sort()[0] ?? null);
  return { items, providers, refreshedAt, stale: providers.some((p) => p.stale) };
}

function restrict(catalog: ModelCatalog, provider: Provider): ModelCatalog {
  return summarize(
    catalog.items.filter((item) => item.provider === provider),
    catalog.providers.filter((p) => p.provider === provider),
  );
}

function errorText(reason: unknown): string {
  return (reason instanceof Error ? reason.message : String(reason)).slice(0, 1000);
}
