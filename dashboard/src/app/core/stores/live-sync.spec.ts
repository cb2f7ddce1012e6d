import { Injector, signal, type ProviderToken } from '@angular/core';
import { Subject } from 'rxjs';

import type { ManagerConfiguration, ManagerEvent, ModelCatalog } from '@libs/contracts';

import { Api } from '../api';
import { EventStream } from '../event-stream';
import { LiveState } from '../live/live-state';
import type { Run } from '../api-types';
import { AttentionStore } from './attention-store';
import { ConfigurationStore } from './configuration-store';
import { ConversationStore } from './conversation-store';
import { LandingStore } from './landing-store';
import { LiveSync } from './live-sync';
import { ModelCatalogStore } from './model-catalog-store';
import { NetworkStore } from './network-store';
import { PullRequestsStore } from './pull-requests-store';
import { RequirementsStore } from './requirements-store';
import { RunsStore } from './runs-store';
import { TimersStore } from './timers-store';
import { UsageStore } from './usage-store';
import { LIVE_STATE } from './live-state-token';
import { T0, T1, T2, eventBuilder, message, requirement, run, timer } from '../../../testing/builders';

// How LiveSync hands each event to the store that owns its parts, and how a mutation's answer
// merges next to events. The merge rules themselves are live-state.spec.ts's.

const values: ManagerConfiguration['values'] = {
  agentEnvironmentPass: [],
  agentIsolation: 'auto',
  agentProcessLimit: 2048,
  agentShmSizeMb: 256,
  agentTmpSizeMb: 2048,
  agentWritablePaths: [],
  allowedOrigin: null,
  networkAllow: [],
  networkDeny: [],
  networkMode: 'allow_list',
  notificationChannels: [],
  notificationWebhookSecret: null,
  authentication: 'token',
  board: null,
  cancelledRequirementRetentionDays: 7,
  claudeExecutable: 'claude',
  codexExecutable: 'codex',
  defaultBudgetMaxCostUsd: null,
  defaultBudgetMaxTokens: null,
  databasePath: null,
  databasePoolSize: 10,
  databaseStatementTimeoutSeconds: 60,
  databaseTls: 'url',
  databaseUrl: null,
  doneRequirementRetentionDays: 30,
  githubApiUrl: 'https://api.github.com',
  githubWebhookSecret: null,
  gitlabApiUrl: 'https://gitlab.com/api/v4',
  gitlabWebhookSecret: null,
  host: '127.0.0.1',
  isolation: 'worktree',
  extraClaudeModels: [],
  extraCodexModels: [],
  logFilePath: null,
  logLevel: 'info',
  logMaxFiles: '5',
  logMaxSize: '10m',
  modelCatalogRefreshHours: 24,
  personEmail: null,
  personName: null,
  port: 3000,
  pullRequestReconcileIntervalSeconds: 60,
  rdInactivityTimeoutSeconds: 600,
  maxPreviews: 4,
  previewPath: null,
  readyPattern: null,
  runCommand: null,
  secrets: [],
  worktreeIdleDays: 7,
  worktreeLinks: [],
  worktreeRoot: null,
  worktreeSetupCommand: null,
  worktreePool: 2,
  intakeLabels: [],
  intakeProvider: 'codex',
  intakeStart: 'todo',
  intakeWriteBack: 'work',
  worktreeSubdirectory: null,
  worktreeTeardownCommand: null,
};
const configuration: ManagerConfiguration = {
  effective: values,
  githubWebhookSecretConfigured: false,
  gitlabWebhookSecretConfigured: false,
  notificationWebhookSecretConfigured: false,
  liveFields: [],
  overriddenFields: [],
  path: '/tmp/config.json',
  restartRequired: false,
  restartRequiredFields: [],
  values,
};

const event = eventBuilder(T1);

/** Answers by `METHOD path`; a list nobody set up is empty. Every call is recorded. */
function fakeApi(answers: Record<string, (options: unknown) => unknown> = {}) {
  const calls: string[] = [];
  const respond = (method: string) => (path: string, options: unknown) => {
    calls.push(`${method} ${path}`);
    const answer = answers[`${method} ${path}`];
    return Promise.resolve(answer ? answer(options) : { items: [], nextCursor: null });
  };
  const api = {
    all: async <T>(
      page: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | null }>,
      onPage?: (items: T[]) => void,
    ) => {
      const { items } = await page(undefined);
      onPage?.(items);
      return items;
    },
    call: <T>(request: Promise<T>) => request,
    client: {
      DELETE: respond('DELETE'),
      GET: respond('GET'),
      PATCH: respond('PATCH'),
      POST: respond('POST'),
      PUT: respond('PUT'),
    },
    pageSize: 200,
  };
  return { api, calls };
}

function setup(answers?: Record<string, (options: unknown) => unknown>) {
  const { api, calls } = fakeApi(answers);
  const events = new Subject<ManagerEvent | 'resync'>();
  const stores: ProviderToken<unknown>[] = [
    AttentionStore,
    ConfigurationStore,
    ConversationStore,
    LandingStore,
    LiveSync,
    ModelCatalogStore,
    NetworkStore,
    PullRequestsStore,
    RequirementsStore,
    RunsStore,
    TimersStore,
    UsageStore,
  ];
  const injector = Injector.create({
    providers: [
      { provide: Api, useValue: api },
      { provide: EventStream, useValue: { events$: events.asObservable(), state: signal('live') } },
      { provide: LIVE_STATE, useFactory: () => new LiveState() },
      // Built in the injector's context (their fields call inject()), without Angular's JIT compiler.
      ...stores.map((store) => ({ provide: store, useFactory: () => new (store as new () => unknown)() })),
    ],
  });
  const sut = injector.get(LiveSync);
  const get = <T>(token: ProviderToken<T>): T => injector.get(token);
  const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
  return { calls, emit: (e: ManagerEvent) => events.next(e), get, settle, sut };
}

describe(LiveSync.name, () => {
  it('reads the three boards and the usage totals on start', async () => {
    const { calls, get, settle } = setup({
      'GET /api/requirements': () => ({ items: [requirement('req_a', T0)], nextCursor: null }),
    });
    await settle();
    expect(calls).toEqual(
      expect.arrayContaining(['GET /api/requirements', 'GET /api/pull-requests', 'GET /api/timers', 'GET /api/usage']),
    );
    expect(get(RequirementsStore).requirements().get('req_a')?.title).toBe('req_a');
    expect(get(RequirementsStore).loading()).toBe(false);
  });

  it("sends the board's first page alone, and the other snapshots once it is in", async () => {
    let answerPage: () => void = () => undefined;
    const firstPage = new Promise<void>((resolve) => (answerPage = resolve));
    const { calls, get, settle } = setup({
      'GET /api/requirements': () => firstPage.then(() => ({ items: [requirement('req_a', T0)], nextCursor: null })),
    });
    await settle();
    expect(calls).toEqual(['GET /api/requirements']);
    answerPage();
    await settle();
    expect(calls).toEqual([
      'GET /api/requirements',
      'GET /api/pull-requests',
      'GET /api/timers',
      'GET /api/usage',
      'GET /api/usage',
      'GET /api/landing-queue',
      'GET /api/workspace',
      'GET /api/attention',
    ]);
    await settle();
    expect(get(RequirementsStore).loading()).toBe(false);
  });

  it('on a deep link to a Requirement, reads its conversation before the boards', async () => {
    const globals = globalThis as unknown as { location?: { pathname: string } };
    globals.location = { pathname: '/requirements/req_a' };
    try {
      let answerRequirement: () => void = () => undefined;
      const requirementRead = new Promise<void>((resolve) => (answerRequirement = resolve));
      const { calls, settle, sut } = setup({
        'GET /api/requirements/{id}': () => requirementRead.then(() => requirement('req_a', T0)),
        'GET /api/requirements/{id}/messages': () => ({ items: [], nextCursor: null }),
      });
      await settle();
      // Its reads start with the shell, before the detail view (a lazy chunk) asks for them...
      expect(calls).toEqual(['GET /api/requirements/{id}']);
      // ...which then joins them rather than reading again.
      const opened = sut.openRequirement('req_a');
      answerRequirement();
      await opened;
      await settle();
      expect(calls.filter((c) => c === 'GET /api/requirements/{id}')).toHaveLength(1);
      expect(calls).toContain('GET /api/requirements/{id}/messages');
      expect(calls.indexOf('GET /api/requirements')).toBeGreaterThan(
        calls.indexOf('GET /api/requirements/{id}/messages'),
      );
      expect(calls).toEqual(expect.arrayContaining(['GET /api/pull-requests', 'GET /api/timers', 'GET /api/usage']));
    } finally {
      delete globals.location;
    }
  });

  it("reads a long conversation's newest pages first, and the older ones once those are in", async () => {
    const long = requirement('req_a', T0);
    long.session.lastMessageSequence = 1000;
    const asked: number[] = [];
    let answerNewest: () => void = () => undefined;
    const newestIn = new Promise<void>((resolve) => (answerNewest = resolve));
    const { get, settle, sut } = setup({
      'GET /api/requirements/{id}': () => long,
      'GET /api/requirements/{id}/messages': (options) => {
        const after = (options as { params: { query: { afterSequence: number } } }).params.query.afterSequence;
        asked.push(after);
        const items = Array.from({ length: Math.max(0, Math.min(200, 1000 - after)) }, (_, i) =>
          message('req_a', after + i + 1),
        );
        return (after >= 600 ? newestIn : Promise.resolve()).then(() => ({ items, nextCursor: null }));
      },
    });
    await settle();
    const opened = sut.openRequirement('req_a');
    await settle();
    // Past the end (sent since the snapshot), then the last two pages: nothing older yet.
    expect(asked).toEqual([1000, 800, 600]);
    answerNewest();
    await opened;
    expect(asked).toEqual([1000, 800, 600, 400, 200, 0]);
    expect(get(ConversationStore).messages('req_a')()).toHaveLength(1000);
  });

  it('hands each part of one event to the store that owns it, and leaves the others alone', async () => {
    const { emit, get, settle } = setup();
    await settle();
    const pullRequestsBefore = get(PullRequestsStore).pullRequests();
    const timersBefore = get(TimersStore).timers();
    const finished: Run[] = [];
    get(RunsStore).finished$.subscribe((r) => finished.push(r));

    emit(
      event('run.succeeded', 'req_a', {
        requirement: requirement('req_a', T1, 'waiting_confirmation'),
        run: run('run_1', 'req_a', T1),
      }),
    );

    expect(get(RequirementsStore).requirements().get('req_a')?.status).toBe('waiting_confirmation');
    expect(get(RunsStore).runs().get('run_1')?.status).toBe('succeeded');
    expect(finished.map((r) => r.id)).toEqual(['run_1']);
    expect(get(PullRequestsStore).pullRequests()).toBe(pullRequestsBefore);
    expect(get(TimersStore).timers()).toBe(timersBefore);

    // A Requirement's end carries the timers that ended with it.
    emit(
      event('requirement.completed', 'req_a', {
        requirement: requirement('req_a', T2, 'done'),
        timers: [timer('tmr_1', 'req_a')],
      }),
    );
    expect(get(RequirementsStore).requirements().get('req_a')?.status).toBe('done');
    expect(get(TimersStore).timers().has('tmr_1')).toBe(true);
  });

  it('keeps messages only for an opened conversation', async () => {
    const { emit, get, settle, sut } = setup({ 'GET /api/requirements/{id}': () => requirement('req_a', T0) });
    await settle();
    emit(
      event('message.created', 'req_b', {
        message: message('req_b', 1, 'msg_b1'),
        requirement: requirement('req_b', T0),
      }),
    );
    await sut.openRequirement('req_a');
    emit(
      event('message.created', 'req_a', {
        message: message('req_a', 1, 'msg_a1'),
        requirement: requirement('req_a', T0),
      }),
    );

    expect(
      get(ConversationStore)
        .messages('req_a')()
        .map((m) => m.id),
    ).toEqual(['msg_a1']);
    expect(get(ConversationStore).messages('req_b')()).toEqual([]);
    expect(get(ConversationStore).opened()).toEqual([{ lastSequence: 1, requirementId: 'req_a' }]);
  });

  it("lets a mutation's answer lose a same-millisecond tie to the event, but show when newer", async () => {
    let answer = requirement('req_a', T1, 'todo');
    const { emit, get, settle } = setup({ 'POST /api/requirements/{id}/start': () => ({ requirement: answer }) });
    await settle();
    const requirements = get(RequirementsStore);
    emit(
      event('run.failed', 'req_a', {
        requirement: requirement('req_a', T1, 'waiting_confirmation'),
        run: { ...run('run_1', 'req_a', T1), status: 'failed' },
      }),
    );

    await requirements.start('req_a');
    expect(requirements.requirements().get('req_a')?.status).toBe('waiting_confirmation');

    answer = requirement('req_a', T2, 'doing');
    await requirements.start('req_a');
    expect(requirements.requirements().get('req_a')?.status).toBe('doing');
  });

  it('removes a purged Requirement and its timers for good, even from a late answer', async () => {
    const { emit, get, settle } = setup({ 'GET /api/requirements/{id}': () => requirement('req_a', T0) });
    await settle();
    emit(event('requirement.created', 'req_a', { requirement: requirement('req_a', T0) }));
    emit(event('timer.created', 'req_a', { timer: timer('tmr_1', 'req_a') }));
    emit(event('requirements.purged', null, { requirementIds: ['req_a'] }, T2));

    await get(RequirementsStore).read('req_a');
    expect(get(RequirementsStore).requirements().has('req_a')).toBe(false);
    expect(get(TimersStore).timers().has('tmr_1')).toBe(false);
  });

  it('re-reads what a reconciliation reports incomplete, and tells the settings a new configuration', async () => {
    const { calls, emit, get, settle } = setup({
      'GET /api/requirements/{id}': () => requirement('req_a', T2, 'done'),
    });
    await settle();
    const version = get(ConfigurationStore).version();
    emit(event('manager.reconciled', null, { failedRunIds: [], requirementIds: ['req_a'] }));
    emit(event('manager.configuration.updated', null, { configuration }));
    await settle();

    expect(calls.filter((c) => c === 'GET /api/requirements/{id}')).toHaveLength(1);
    expect(get(RequirementsStore).requirements().get('req_a')?.status).toBe('done');
    expect(get(ConfigurationStore).version()).toBe(version + 1);
  });

  it('keeps the whole model catalog from model_catalog.updated, newer than a read still in flight', async () => {
    let answer: (catalog: ModelCatalog) => void = () => undefined;
    const read = new Promise<ModelCatalog>((resolve) => (answer = resolve));
    const { emit, get, settle } = setup({ 'GET /api/models': () => read });
    await settle();
    const store = get(ModelCatalogStore);
    const loading = store.load();
    const fresh: ModelCatalog = {
      items: [{ efforts: ['low'], id: 'stub-fast', label: 'Stub Fast', provider: 'codex', source: 'codex_app_server' }],
      providers: [{ attemptedAt: T2, error: null, provider: 'codex', refreshedAt: T2, stale: false }],
      refreshedAt: T2,
      stale: false,
    };
    emit(event('model_catalog.updated', null, { catalog: fresh }));
    await settle();
    expect(store.catalog()).toEqual(fresh);
    answer({ ...fresh, items: [], refreshedAt: T0 });
    await loading;
    expect(store.catalog()).toEqual(fresh);
  });

  it('keeps the merge queue from landing.queue.updated over a read or an answer asked for before it', async () => {
    const item = (requirementId: string, position: number, state: 'queued' | 'landing' | 'paused' = 'queued') => ({
      addedAt: T0,
      conflictPaths: [],
      expectedHead: null,
      method: 'squash' as const,
      position,
      reason: null,
      requirementId,
      state,
      title: requirementId,
    });
    let answer: (items: ReturnType<typeof item>[]) => void = () => undefined;
    const { emit, get, settle } = setup({
      'GET /api/landing-queue': () => ({ items: [item('req_a', 1)] }),
      'PUT /api/landing-queue': () => new Promise((resolve) => (answer = (items) => resolve({ items }))),
    });
    await settle();
    const store = get(LandingStore);
    expect(store.queue().map((i) => i.requirementId)).toEqual(['req_a']);

    emit(event('landing.queue.updated', null, { queue: { items: [item('req_a', 1, 'paused'), item('req_b', 2)] } }));
    expect(store.queue().map((i) => [i.requirementId, i.state])).toEqual([
      ['req_a', 'paused'],
      ['req_b', 'queued'],
    ]);

    // A reorder shows at once; its answer, overtaken by an event, does not undo that event.
    const reordered = store.reorder(['req_b', 'req_a']);
    expect(store.queue().map((i) => [i.requirementId, i.position])).toEqual([
      ['req_b', 1],
      ['req_a', 2],
    ]);
    emit(
      event('landing.queue.updated', null, {
        queue: { items: [item('req_b', 1, 'landing'), item('req_a', 2, 'paused')] },
      }),
    );
    answer([item('req_b', 1), item('req_a', 2, 'paused')]);
    await reordered;
    expect(store.queue().map((i) => i.state)).toEqual(['landing', 'paused']);
  });

  it("merges a network.blocked event into the Requirement's network when it is shown, and only then", async () => {
    const blocked = (id: string, requirementId: string, count: number, lastAt: string) => ({
      count,
      firstAt: T0,
      host: 'pypi.org',
      id,
      lastAt,
      method: 'CONNECT',
      port: 443,
      reason: 'pypi.org:443 is not on the allow-list',
      requirementId,
      runId: 'run_1',
    });
    const { emit, get, settle } = setup({
      'GET /api/requirements/{id}/network': () => ({ allow: [], blocked: [], requirementId: 'req_a' }),
    });
    await settle();
    const store = get(NetworkStore);
    await store.read('req_a');
    emit(event('network.blocked', 'req_a', { blocked: blocked('nbl_1', 'req_a', 1, T1) }));
    emit(event('network.blocked', 'req_b', { blocked: blocked('nbl_2', 'req_b', 1, T1) }));
    await settle();
    expect(
      store
        .networks()
        .get('req_a')
        ?.blocked.map((b) => [b.id, b.count]),
    ).toEqual([['nbl_1', 1]]);
    expect(store.networks().has('req_b')).toBe(false);
    // The same row again, with its count grown: replaced, not added.
    emit(event('network.blocked', 'req_a', { blocked: blocked('nbl_1', 'req_a', 4, T2) }));
    await settle();
    expect(
      store
        .networks()
        .get('req_a')
        ?.blocked.map((b) => [b.id, b.count]),
    ).toEqual([['nbl_1', 4]]);
  });

  it("keeps the person's Needs-you items: the read, items opened and cleared live, another person's left out", async () => {
    const me = { id: 'person_me', name: 'Me' };
    const item = (id: string, requirementId: string, person = me) => ({
      id,
      person,
      reason: 'waiting_reply' as const,
      requirementId,
      since: T0,
      summary: 'Which one?',
    });
    let answerList: () => void = () => undefined;
    const listed = new Promise<void>((resolve) => (answerList = resolve));
    const { emit, get, settle } = setup({
      'GET /api/attention': () => listed.then(() => ({ items: [item('atn_1', 'req_a'), item('atn_2', 'req_b')] })),
      'GET /api/requirements': () => ({ items: [requirement('req_a', T0)], nextCursor: null }),
      'GET /api/requirements/{id}': () => requirement('req_b', T0),
      'GET /api/workspace': () => ({ person: me, runnerId: null }),
    });
    await settle();
    const store = get(AttentionStore);
    const opened: string[] = [];
    store.opened$.subscribe((i) => opened.push(i.id));
    // While the read is in flight, atn_2 clears: the answer (older) must not bring it back.
    emit(event('attention.cleared', 'req_b', { item: item('atn_2', 'req_b'), requirement: requirement('req_b', T1) }));
    answerList();
    await settle();
    await settle();
    expect(store.items().map((i) => i.id)).toEqual(['atn_1']);
    expect(store.count()).toBe(1);
    // Live: one of mine opens (announced), another person's is left out, one clears.
    emit(event('attention.opened', 'req_c', { item: item('atn_3', 'req_c'), requirement: requirement('req_c', T2) }));
    const other = item('atn_4', 'req_d', { id: 'person_other', name: 'Other' });
    emit(event('attention.opened', 'req_d', { item: other, requirement: requirement('req_d', T2) }));
    emit(event('attention.cleared', 'req_a', { item: item('atn_1', 'req_a'), requirement: requirement('req_a', T2) }));
    expect(store.items().map((i) => i.id)).toEqual(['atn_3']);
    expect(opened).toEqual(['atn_3']);
    // The Requirement an item names, even beyond the board's window, from the event that carried it.
    expect(store.requirement('req_c')?.id).toBe('req_c');
  });
});
