import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Schemas } from '@libs/api-client';

import { ok } from './support/api';
import { sendUntyped } from './support/http';
import { IDLE_AGENT, type Sandbox, makeSandbox } from './support/manager-process';
import { type InProcessManager, startInProcess } from './support/in-process';
import { ModelStub, REAL_AGENT_CLIS, claudeEnvironment, codexEnvironment } from './support/model-stub';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';

// The model catalog (issue 17 §4) against the real CLIs pointed at the model stub: Codex lists
// through `codex app-server` (whose model/list asks the stub's models endpoint), Claude Code's
// part is its aliases plus the Anthropic models endpoint (the stub's). Then with the sources
// failing: a first start serves the built-in list, a later failure the last good listing, both
// flagged stale with the source's error.

jest.setTimeout(120_000);

const [CODEX, CLAUDE] = REAL_AGENT_CLIS;

type Catalog = Schemas['ModelCatalogResponseDto'];
type Provider = Schemas['CreateRequirementDto']['provider'];

describe('model catalog', () => {
  let sandbox: Sandbox;
  let stub: ModelStub;
  let manager: InProcessManager;
  let agentEnv: Record<string, string>;
  let codexHome: string;

  const start = (env: Record<string, string> = {}) =>
    startInProcess({
      env: {
        ...agentEnv,
        CODE_FACTORY_CLAUDE_EXECUTABLE: CLAUDE.executable,
        CODE_FACTORY_CODEX_EXECUTABLE: CODEX.executable,
        GH_TOKEN: '',
        GITHUB_TOKEN: '',
        ...env,
      },
      sandbox,
    });
  const catalog = (provider?: Provider): Promise<Catalog> =>
    ok(manager.api.GET('/api/models', { params: { query: { provider } } }), 200);
  const part = (c: Catalog, provider: string) => ({
    items: c.items.filter((i) => i.provider === provider),
    status: c.providers.find((p) => p.provider === provider)!,
  });
  const refresh = async (): Promise<Catalog> => {
    const res = await manager.api.POST('/api/models/refresh');
    expect(res.status).toBe(200);
    return res.data as Catalog;
  };

  beforeAll(async () => {
    sandbox = makeSandbox();
    stub = await ModelStub.start();
    // One home for both CLIs: Codex's config (CODEX_HOME, with its model list at the stub) and Claude's credential.
    const dir = fs.mkdtempSync(path.join('/var/tmp', 'am-models-'));
    codexHome = dir;
    agentEnv = { ...codexEnvironment(stub, dir, { modelCatalog: true }), ...claudeEnvironment(stub, dir) };
  });
  afterAll(async () => {
    await manager?.stop();
    await stub?.close();
    sandbox?.cleanup();
  });

  it('at a first start with every source failing, serves the built-in list and Claude Code aliases, flagged stale with the errors', async () => {
    stub.models.error = { message: 'models endpoint down', status: 500 };
    // The daily refresh is on: it is due at once (never listed), without holding the start up.
    manager = await start({ CODE_FACTORY_MODEL_CATALOG_REFRESH_HOURS: '24' });
    const first = await until('the start refresh to have been attempted', async () => {
      const c = await catalog();
      return c.providers.every((p) => p.attemptedAt !== null) && c;
    });
    expect(first.stale).toBe(true);
    expect(first.refreshedAt).toBeNull();

    const codex = part(first, 'codex');
    expect(codex.status).toMatchObject({ refreshedAt: null, stale: true });
    // Codex answers an empty list when its models endpoint fails and it has nothing cached.
    expect(codex.status.error).toMatch(/listed no models/);
    expect(codex.items.length).toBeGreaterThan(0);
    expect(codex.items.every((i) => i.source === 'builtin')).toBe(true);

    const claude = part(first, 'claude-code');
    expect(claude.status).toMatchObject({ refreshedAt: null, stale: true });
    expect(claude.status.error).toMatch(/answered 500: models endpoint down/);
    expect(claude.items.map((i) => i.id)).toEqual([
      'sonnet',
      'opus',
      'haiku',
      'fable',
      'best',
      'sonnet[1m]',
      'opus[1m]',
      'fable[1m]',
      'opusplan',
    ]);
    expect(
      claude.items.every((i) => i.source === 'claude_code_alias' && i.efforts.join() === 'low,medium,high,xhigh,max'),
    ).toBe(true);

    // Both sources were really asked: Codex through its own models endpoint, the Anthropic API with Claude's key.
    expect(stub.modelListRequests.find((r) => r.api === 'openai')?.url).toMatch(/^\/v1\/models\?client_version=/);
    const anthropic = stub.modelListRequests.find((r) => r.api === 'anthropic')!;
    expect(anthropic.url).toBe('/v1/models?limit=1000');
    expect(anthropic.headers['x-api-key']).toBe('sk-fake');
    expect(stub.requests).toEqual([]);
  });

  it('a refresh lists what the sources answer, and model_catalog.updated carries the whole catalog', async () => {
    stub.models.error = null;
    stub.models.codex = [
      { efforts: ['low', 'medium', 'ultra'], id: 'stub-codex-fast', label: 'Stub Codex Fast' },
      { efforts: ['high', 'xhigh', 'max'], id: 'stub-codex-deep', label: 'Stub Codex Deep' },
    ];
    stub.models.anthropic = [
      { id: 'claude-stub-sonnet-9', label: 'Claude Stub Sonnet 9' },
      { id: 'claude-stub-opus-9', label: 'Claude Stub Opus 9' },
    ];
    const events = await connectSse(`${manager.origin}/api/events`);
    const refreshed = await refresh();

    expect(refreshed.stale).toBe(false);
    expect(refreshed.refreshedAt).not.toBeNull();
    expect(refreshed.providers.map((p) => [p.provider, p.stale, p.error])).toEqual([
      ['codex', false, null],
      ['claude-code', false, null],
    ]);
    // Codex's own listing, efforts as it lists them (less `ultra`, which no Requirement can carry).
    expect(part(refreshed, 'codex').items).toEqual([
      {
        efforts: ['low', 'medium'],
        id: 'stub-codex-fast',
        label: 'Stub Codex Fast',
        provider: 'codex',
        source: 'codex_app_server',
      },
      {
        efforts: ['high', 'xhigh', 'max'],
        id: 'stub-codex-deep',
        label: 'Stub Codex Deep',
        provider: 'codex',
        source: 'codex_app_server',
      },
    ]);
    const claude = part(refreshed, 'claude-code').items;
    expect(claude.filter((i) => i.source === 'anthropic_api').map((i) => [i.id, i.label])).toEqual([
      ['claude-stub-sonnet-9', 'Claude Stub Sonnet 9'],
      ['claude-stub-opus-9', 'Claude Stub Opus 9'],
    ]);
    expect(claude.filter((i) => i.source === 'claude_code_alias')).toHaveLength(9);

    const [event] = await events.waitFor(1);
    events.close();
    expect(event.event).toBe('model_catalog.updated');
    expect(event.data.payload).toEqual({ catalog: refreshed });
    expect(event.data.actor).toMatchObject({ kind: 'human' });

    expect(await catalog()).toEqual(refreshed);
    const codexOnly = await catalog('codex');
    expect(codexOnly.items.map((i) => i.id)).toEqual(['stub-codex-fast', 'stub-codex-deep']);
    expect(codexOnly.providers.map((p) => p.provider)).toEqual(['codex']);
    // An unknown provider: untyped on purpose.
    const bad = await sendUntyped(manager.origin, 'GET', '/api/models?provider=gemini');
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ statusCode: 400 });
  });

  it('a source that fails later keeps its last listing, flagged stale with the error, also after a restart', async () => {
    const before = await catalog();
    stub.models.error = { message: 'overloaded', status: 529 };
    // Codex keeps its own copy of the list for a while (models_cache.json in CODEX_HOME) and would
    // answer from it: take it away, as if it had expired, so Codex's answer is the failure.
    fs.rmSync(path.join(codexHome, 'models_cache.json'), { force: true });
    const failed = await refresh();

    expect(failed.stale).toBe(true);
    expect(failed.refreshedAt).toBe(before.refreshedAt);
    expect(failed.items).toEqual(before.items);
    const codex = part(failed, 'codex').status;
    expect(codex).toMatchObject({ refreshedAt: part(before, 'codex').status.refreshedAt, stale: true });
    expect(codex.error).toMatch(/listed no models/);
    expect(codex.attemptedAt! > codex.refreshedAt!).toBe(true);
    expect(part(failed, 'claude-code').status.error).toMatch(/answered 529: overloaded/);

    // What was listed is in the database: a restart (no automatic refresh) serves it, still flagged.
    await manager.stop();
    manager = await start();
    expect(await catalog()).toEqual(failed);
  });

  it('accepts a model the catalog does not know on create and edit, and flags it', async () => {
    const create = (body: Omit<Schemas['CreateRequirementDto'], 'title'>) =>
      manager.api.POST('/api/requirements', { body: { title: 'Catalogued', ...body } });
    const known = await create({ model: 'stub-codex-fast', provider: 'codex', reasoningEffort: 'medium' });
    expect(known.status).toBe(201);
    expect(known.data).toMatchObject({ model: 'stub-codex-fast', warnings: [] });

    const unknown = await create({ model: 'gpt-unheard-of', provider: 'codex' });
    expect(unknown.status).toBe(201);
    expect(unknown.data).toMatchObject({ model: 'gpt-unheard-of', status: 'todo', warnings: ['unknown_model'] });
    expect(
      await ok(manager.api.GET('/api/requirements/{id}', { params: { path: { id: unknown.data!.id } } })),
    ).toMatchObject({ model: 'gpt-unheard-of' });

    // An alias with Claude Code's context suffix is a model name like any other.
    expect((await create({ model: 'sonnet[1m]', provider: 'claude-code', reasoningEffort: 'max' })).data).toMatchObject(
      { model: 'sonnet[1m]', warnings: [] },
    );
    expect((await create({ provider: 'claude-code' })).data).toMatchObject({ model: null, warnings: [] });

    const id = known.data!.id;
    const patch = (body: Schemas['UpdateRequirementDto']) =>
      manager.api.PATCH('/api/requirements/{id}', { params: { path: { id } }, body });
    expect((await patch({ model: 'stub-codex-deep', reasoningEffort: 'low' })).data).toMatchObject({
      warnings: ['unsupported_reasoning_effort'],
    });
    expect((await patch({ model: 'claude-stub-opus-9', provider: 'claude-code' })).data).toMatchObject({
      provider: 'claude-code',
      warnings: [],
    });
    expect((await patch({ model: 'stub-codex-deep' })).data).toMatchObject({
      model: 'stub-codex-deep',
      warnings: ['unknown_model'],
    });
    // An edit that does not touch the model says nothing about it.
    expect((await patch({ title: 'Renamed' })).data).toMatchObject({ title: 'Renamed', warnings: [] });
    // A bad model name is still refused as before.
    expect((await patch({ model: 'two words' })).status).toBe(400);

    // A follow-up an agent proposes is flagged the same way (here the owner calls the agent API for the session).
    const source = { parentRequirementId: unknown.data!.id, sourceSessionId: unknown.data!.session.id };
    const proposed = await manager.api.POST('/api/agent/requirements', {
      body: { ...source, model: 'gpt-also-unheard-of', title: 'Follow-up' },
    });
    expect(proposed.status).toBe(201);
    expect(proposed.data).toMatchObject({
      createdBy: 'rd_agent',
      model: 'gpt-also-unheard-of',
      provider: 'codex',
      warnings: ['unknown_model'],
    });
    const listed = await manager.api.POST('/api/agent/requirements', {
      body: { ...source, model: 'stub-codex-fast', title: 'Listed follow-up' },
    });
    expect(listed.data).toMatchObject({ warnings: [] });
  });

  it('offers the configuration extra models at once and announces the change', async () => {
    const events = await connectSse(`${manager.origin}/api/events`);
    const res = await manager.api.PATCH('/api/configuration', { body: { extraCodexModels: ['acme-private-coder'] } });
    expect(res.status).toBe(200);
    // Two events: the configuration's and the catalog's (in either order).
    const got = await events.waitFor(2);
    events.close();
    const event = got.find((e) => e.event === 'model_catalog.updated')!;
    expect(got.map((e) => e.event).sort()).toEqual(['manager.configuration.updated', 'model_catalog.updated']);
    const items = (event.data.payload as { catalog: Catalog }).catalog.items;
    expect(items.find((i) => i.id === 'acme-private-coder')).toEqual({
      efforts: ['low', 'medium', 'high', 'xhigh', 'max'],
      id: 'acme-private-coder',
      label: 'acme-private-coder',
      provider: 'codex',
      source: 'configuration',
    });
    const created = await manager.api.POST('/api/requirements', {
      body: { model: 'acme-private-coder', provider: 'codex', title: 'Private model' },
    });
    expect(created.data).toMatchObject({ warnings: [] });
  });

  it('fails the Codex listing quickly for a program that is not Codex, or none, and serves the last one stale', async () => {
    const before = part(await catalog(), 'codex').items;
    const setCodex = async (codexExecutable: string) =>
      expect((await manager.api.PATCH('/api/configuration', { body: { codexExecutable } })).status).toBe(200);
    try {
      // Reads its stdin and never answers: the handshake timeout, not the whole listing's, ends it.
      await setCodex(IDLE_AGENT);
      const silent = part(await refresh(), 'codex');
      expect(silent.status.error).toMatch(/did not answer initialize within 5 s/);
      expect(silent.items).toEqual(before);

      await setCodex('/nonexistent/codex');
      const missing = part(await refresh(), 'codex');
      expect(missing.status).toMatchObject({ stale: true });
      expect(missing.status.error).toMatch(/could not start \/nonexistent\/codex app-server/);
      expect(missing.items).toEqual(before);
    } finally {
      await setCodex(CODEX.executable);
    }
  });
});
