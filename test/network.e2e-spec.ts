import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';

import { ok } from './support/api';
import { initRepository } from './support/git-repo';
import type { ManagerProcess } from './support/manager-process';
import { ModelStub, REAL_AGENT_CLIS } from './support/model-stub';
import { useRealAgentWorld } from './support/real-agent-world';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';

// Issue 45: an agent run reaches only the hosts the person allows. Both real CLIs, each run in a
// network namespace of its own whose only way out is its run's proxy; "outside" is two HTTP
// servers on this machine's loopback, so the allow-list names them as 127.0.0.1:port.

jest.setTimeout(180_000);

async function outsideServer(name: string): Promise<{ port: number; hits: string[]; close: () => Promise<void> }> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    res.end(`${name}-answered`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    close: () => new Promise((resolve) => server.close(() => resolve())),
    hits,
    port: (server.address() as AddressInfo).port,
  };
}

/** The run's finished state, and every tool result it printed, joined. */
async function runOutput(
  manager: ManagerProcess,
  requirementId: string,
  previous: number,
): Promise<{ status: string; output: string; traceTitles: string[]; runId: string }> {
  const run = await until(
    'the run to finish',
    async () => {
      const runs = (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId } } }))).items;
      const latest = runs.length > previous ? runs[0] : undefined;
      return latest && latest.status !== 'running' && latest;
    },
    150_000,
    200,
  );
  const trace = (
    await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: run.id }, query: { limit: 200 } } }))
  ).items;
  return {
    output: trace
      .filter((t) => t.kind === 'tool_result')
      .map((t) => t.detail ?? '')
      .join('\n'),
    runId: run.id,
    status: run.status,
    traceTitles: trace.filter((t) => t.nativeType === 'network.blocked').map((t) => t.title),
  };
}

describe.each(REAL_AGENT_CLIS)('the network of an agent of the real $provider CLI', (cli) => {
  const { provider } = cli;
  let stub: ModelStub;
  let manager: ManagerProcess;
  let workspace: string;
  let shared: string;
  useRealAgentWorld(
    cli,
    'network',
    (world) =>
      ({
        manager,
        stub,
        sandbox: { shared, workspace },
      } = world),
    {
      // What the person's shell exported: an agent sees none of it but what is passed on (issue 45 §4).
      env: {
        CODE_FACTORY_AGENT_ENVIRONMENT_PASS: 'PASSED_ON',
        GITHUB_TOKEN: 'ghp_person_secret_token',
        PASSED_ON: 'passed-value',
        PERSON_EXPORTED: 'exported-value',
        // A secret the proxy adds as a header for one host (issue 45 §4), never in the agent's environment.
        REGISTRY_TOKEN: 'tok-registry-5ecret-value',
        SSH_AUTH_SOCK: '/tmp/person-ssh-agent.sock',
      },
    },
  );
  let allowed: Awaited<ReturnType<typeof outsideServer>>;
  let other: Awaited<ReturnType<typeof outsideServer>>;

  beforeAll(async () => {
    allowed = await outsideServer('allowed');
    other = await outsideServer('other');
  });
  afterAll(async () => {
    await allowed?.close();
    await other?.close();
  });

  const start = (id: string) =>
    ok(manager.api.POST('/api/requirements/{id}/start', { params: { path: { id } }, body: { message: `Go ${id}` } }));

  it('reaches an allowed host through its proxy; a host not allowed is refused with the reason, recorded, published and listed; allowing it for the Requirement opens it', async () => {
    const status = await ok(manager.api.GET('/api/network'));
    expect(status).toMatchObject({ isolated: true, mode: 'allow_list', unavailableReason: null });
    expect(status.defaults).toEqual(expect.arrayContaining(['api.openai.com', 'api.anthropic.com', 'github.com']));
    await ok(manager.api.PATCH('/api/configuration', { body: { networkAllow: [`127.0.0.1:${allowed.port}`] } }));

    const requirement = await ok(manager.api.POST('/api/requirements', { body: { provider, title: 'Reach out' } }));
    const since = new Date().toISOString();
    const events = await connectSse(`${manager.origin}/api/events`);
    stub.scriptFor(requirement.id, [
      { shell: `curl -s --max-time 20 http://127.0.0.1:${allowed.port}/first; echo " [allowed exit $?]"` },
      { shell: `curl -s --max-time 20 http://127.0.0.1:${other.port}/secret; echo " [other exit $?]"` },
      {
        shell: `curl -s --max-time 20 -o /dev/null -w 'connect=%{http_connect}' https://example.com/; echo " [tls exit $?]"`,
      },
      // Around the proxy: straight to the port (bash's /dev/tcp), a raw socket outside, a name lookup.
      {
        shell: `(exec 3<>/dev/tcp/127.0.0.1/${other.port}) 2>/dev/null && echo "[direct connected]" || echo "[direct refused]"`,
      },
      {
        shell: `python3 -c "import socket; s=socket.socket(); s.settimeout(5); s.connect(('1.1.1.1', 53))" 2>/dev/null && echo "[raw connected]" || echo "[raw failed]"`,
      },
      {
        shell: `python3 -c "import socket; socket.getaddrinfo('example.com', 443)" 2>/dev/null && echo "[dns resolved]" || echo "[dns failed]"`,
      },
      // The manager is still reachable (its agent API, as code-factory-cli calls it).
      { shell: 'code-factory-cli requirement related >/dev/null && echo "[manager reached]"' },
      // Its environment, and every environment it can read in /proc: what was passed on, nothing else.
      {
        shell: `env | grep -E '^(PERSON_EXPORTED|GITHUB_TOKEN|GH_TOKEN|SSH_AUTH_SOCK|PASSED_ON)=' | sort; echo "[proc $(cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -cE 'exported-value|ghp_person_secret|person-ssh-agent')]"`,
      },
      // Codex's config.toml names the model API (always reachable) and its key's variable: the
      // agent may not rewrite it to open the network or reach a secret on its next run.
      ...(provider === 'codex'
        ? [
            {
              shell: `echo 'base_url = "http://exfiltrate.example"' >> "$CODEX_HOME/config.toml" 2>/dev/null && echo "[config written]" || echo "[config refused]"`,
            },
          ]
        : []),
      { text: 'Network probed.' },
    ]);
    await start(requirement.id);
    const first = await runOutput(manager, requirement.id, 0);
    expect(first.status).toBe('succeeded');
    expect(first.output).toContain('allowed-answered [allowed exit 0]');
    expect(first.output).toContain(
      `Agent Manager blocked this connection: 127.0.0.1:${other.port} is not on the allow-list\n [other exit 0]`,
    );
    expect(first.output).toMatch(/connect=403 \[tls exit \d+\]/);
    expect(first.output).toContain('[direct refused]');
    expect(first.output).toContain('[raw failed]');
    expect(first.output).toContain('[dns failed]');
    expect(first.output).toContain('[manager reached]');
    expect(first.output).toContain('PASSED_ON=passed-value');
    expect(first.output).not.toMatch(/PERSON_EXPORTED|GITHUB_TOKEN|GH_TOKEN|SSH_AUTH_SOCK/);
    expect(first.output).toContain('[proc 0]');
    if (provider === 'codex') {
      expect(first.output).toContain('[config refused]');
    }
    expect(allowed.hits).toEqual(['/first']);
    expect(other.hits).toEqual([]);

    // In the run's trace, once per host and port.
    expect(first.traceTitles).toEqual(
      expect.arrayContaining([
        `Network: GET 127.0.0.1:${other.port} blocked`,
        'Network: CONNECT example.com:443 blocked',
      ]),
    );
    // Published, and listed across the board and on the Requirement.
    const published = await until('the blocked events', async () => {
      const seen = events.events.filter((e) => e.event === 'network.blocked');
      return seen.length >= 2 && seen;
    });
    events.close();
    expect(published.map((e) => (e.data.payload as { blocked: { host: string } }).blocked.host).sort()).toEqual([
      '127.0.0.1',
      'example.com',
    ]);
    const listed = (await ok(manager.api.GET('/api/network/blocked', { params: { query: { since } } }))).items;
    expect(listed).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          count: 1,
          host: '127.0.0.1',
          method: 'GET',
          port: other.port,
          requirementId: requirement.id,
          runId: first.runId,
        }),
        expect.objectContaining({ host: 'example.com', method: 'CONNECT', port: 443, requirementId: requirement.id }),
      ]),
    );
    const later = (
      await ok(
        manager.api.GET('/api/network/blocked', {
          params: { query: { since: new Date(Date.now() + 60_000).toISOString() } },
        }),
      )
    ).items;
    expect(later).toEqual([]);

    // The person allows it for this Requirement: the next attempt goes through.
    const opened = await ok(
      manager.api.PUT('/api/requirements/{id}/network', {
        params: { path: { id: requirement.id } },
        body: { allow: [`127.0.0.1:${other.port}`] },
      }),
    );
    expect(opened).toMatchObject({ allow: [`127.0.0.1:${other.port}`], requirementId: requirement.id });
    expect(opened.blocked.map((b) => b.host).sort()).toEqual(['127.0.0.1', 'example.com']);
    stub.scriptFor(requirement.id, [
      { shell: `curl -s --max-time 20 http://127.0.0.1:${other.port}/now; echo " [other exit $?]"` },
      { text: 'Reached it.' },
    ]);
    await start(requirement.id);
    const second = await runOutput(manager, requirement.id, 1);
    expect(second.status).toBe('succeeded');
    expect(second.output).toContain('other-answered [other exit 0]');
    expect(other.hits).toEqual(['/now']);
    // Its prompt said what is still refused (the host now allowed is not named), so it can ask.
    const told = stub.requests.filter((r) => r.transcript.includes('These were refused and are still not allowed'));
    expect(told.length).toBeGreaterThan(0);
    for (const request of told) {
      expect(request.transcript).toContain('still not allowed: example.com:443 (×1).');
      expect(request.transcript).not.toContain(`127.0.0.1:${other.port} (×`);
    }
  });

  it('offline: nothing but the model API and Agent Manager, even what is allowed', async () => {
    await ok(manager.api.PATCH('/api/configuration', { body: { networkMode: 'offline' } }));
    try {
      const requirement = await ok(manager.api.POST('/api/requirements', { body: { provider, title: 'Offline' } }));
      stub.scriptFor(requirement.id, [
        { shell: `curl -s --max-time 20 http://127.0.0.1:${allowed.port}/offline; echo " [allowed exit $?]"` },
        { shell: 'code-factory-cli requirement related >/dev/null && echo "[manager reached]"' },
        { text: 'Offline probed.' },
      ]);
      await start(requirement.id);
      const run = await runOutput(manager, requirement.id, 0);
      expect(run.status).toBe('succeeded');
      expect(run.output).toContain('Agent Manager blocked this connection: the network is offline for agents');
      expect(run.output).toContain('[manager reached]');
      expect(allowed.hits).not.toContain('/offline');
    } finally {
      await ok(manager.api.PATCH('/api/configuration', { body: { networkMode: 'allow_list' } }));
    }
  });

  it('secrets: the proxy adds one as a header for its host while the agent’s environment holds none; the setup command the person wrote gets them; an echoed value is masked in the trace and the conversation', async () => {
    const registry = await new Promise<{ port: number; seen: string[]; close: () => Promise<void> }>((resolve) => {
      const seen: string[] = [];
      const server = http.createServer((req, res) => {
        seen.push(req.headers.authorization ?? '(none)');
        res.end(`registry saw ${req.headers.authorization ?? '(none)'}`);
      });
      server.listen(0, '127.0.0.1', () =>
        resolve({
          close: () => new Promise((done) => server.close(() => done())),
          port: (server.address() as AddressInfo).port,
          seen,
        }),
      );
    });
    // In a folder agents may write (agentWritablePaths): the file itself must still be unreadable to them.
    const secretFile = path.join(shared, 'file-secret');
    fs.writeFileSync(secretFile, 'file-5ecret-value\n', { mode: 0o600 });
    await ok(
      manager.api.PATCH('/api/configuration', {
        body: {
          secrets: [
            {
              format: 'Bearer {value}',
              header: 'Authorization',
              host: `127.0.0.1:${registry.port}`,
              name: 'REGISTRY_TOKEN',
            },
            { file: secretFile, name: 'FILE_SECRET' },
          ],
          // The person's own command: it gets the secrets (one an agent could have written would not).
          worktreeSetupCommand: 'test ${#FILE_SECRET} -eq 17 && echo "[setup has it: $FILE_SECRET]"',
        },
      }),
    );
    try {
      // Only names and sources are configured: the API never holds a value.
      const configuration = JSON.stringify(await ok(manager.api.GET('/api/configuration')));
      expect(configuration).toContain('REGISTRY_TOKEN');
      expect(configuration).not.toMatch(/tok-registry-5ecret-value|file-5ecret-value/);
      // A repository: the Requirement gets a worktree of its own, and its setup runs there.
      initRepository(workspace, { 'README.md': 'secrets\n' });
      const requirement = await ok(manager.api.POST('/api/requirements', { body: { provider, title: 'Secrets' } }));
      stub.scriptFor(requirement.id, [
        {
          shell: `curl -s --max-time 20 -H 'Authorization: forged' http://127.0.0.1:${registry.port}/pkg; echo " [registry exit $?]"`,
        },
        // The file exists for the agent's user, yet reads as nothing in the sandbox.
        {
          shell: `echo "[file: $(cat '${secretFile}' 2>/dev/null | wc -c) bytes, dir: $(ls '${shared}' | wc -l) entries]"`,
        },
        {
          shell: `echo "[env $(env | grep -cE 'REGISTRY_TOKEN|FILE_SECRET|5ecret-value')] [proc $(cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c 5ecret-value)]"`,
        },
        { text: 'Done: the registry said tok-registry-5ecret-value.' },
      ]);
      await start(requirement.id);
      const run = await runOutput(manager, requirement.id, 0);
      expect(run.status).toBe('succeeded');
      // The registry got the real header, in place of the one the agent forged.
      expect(registry.seen).toEqual(['Bearer tok-registry-5ecret-value']);
      // What came back (the header echoed) is masked before it is stored.
      expect(run.output).toContain('registry saw Bearer [secret REGISTRY_TOKEN] [registry exit 0]');
      expect(run.output).toContain('[env 0] [proc 0]');
      expect(run.output).toMatch(/\[file: 0 bytes, dir: [1-9]\d* entries\]/);
      const trace = (
        await ok(
          manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: run.runId }, query: { limit: 200 } } }),
        )
      ).items;
      const setup = trace.find((t) => t.title.startsWith('Worktree setup'));
      expect(setup?.detail).toContain('[setup has it: [secret FILE_SECRET]]');
      expect(JSON.stringify(trace)).not.toMatch(/tok-registry-5ecret-value|file-5ecret-value/);
      const messages = JSON.stringify(
        await ok(manager.api.GET('/api/requirements/{id}/messages', { params: { path: { id: requirement.id } } })),
      );
      expect(messages).toContain('Done: the registry said [secret REGISTRY_TOKEN].');
      expect(messages).not.toMatch(/tok-registry-5ecret-value|file-5ecret-value/);
    } finally {
      await ok(manager.api.PATCH('/api/configuration', { body: { secrets: [], worktreeSetupCommand: null } }));
      await registry.close();
    }
  });

  it('refuses a secret that is not one (400 naming each field, nothing stored)', async () => {
    const bad = await manager.api.PATCH('/api/configuration', {
      body: {
        secrets: [
          { name: '1BAD-NAME' },
          { header: 'Authorization', host: '*.example.com', name: 'WILD' },
          { file: 'relative/path', name: 'REL' },
          { format: 'no placeholder', header: 'Authorization', host: 'example.com', name: 'FMT' },
        ],
      },
    });
    expect(bad.response.status).toBe(400);
    const message = JSON.stringify(bad.error);
    expect(message).toContain('secrets[0].name \\"1BAD-NAME\\" is not an environment variable name');
    expect(message).toContain('secrets[1].host \\"*.example.com\\" must name one host');
    expect(message).toContain('secrets[2].file must be an absolute path');
    expect(message).toContain('secrets[3].format must hold {value}');
    expect((await ok(manager.api.GET('/api/configuration'))).values.secrets).toEqual([]);
  });

  it('refuses what is not a host (400, each named, nothing stored)', async () => {
    const before = (await ok(manager.api.GET('/api/configuration'))).values.networkAllow;
    const bad = await manager.api.PATCH('/api/configuration', {
      body: { networkAllow: ['https://evil.example/x', 'good.example.com', '*', 'two words'] },
    });
    expect(bad.response.status).toBe(400);
    const message = JSON.stringify(bad.error);
    expect(message).toContain('\\"https://evil.example/x\\" is not a host');
    expect(message).toContain('\\"*\\" is not a host');
    expect(message).toContain('\\"two words\\" is not a host');
    expect(message).not.toContain('good.example.com\\" is not');
    expect((await ok(manager.api.GET('/api/configuration'))).values.networkAllow).toEqual(before);

    const mode = await manager.api.PATCH('/api/configuration', {
      body: { networkMode: 'everything' as unknown as 'open' },
    });
    expect(mode.response.status).toBe(400);

    const requirement = await ok(manager.api.POST('/api/requirements', { body: { provider, title: 'Bad allow' } }));
    const refused = await manager.api.PUT('/api/requirements/{id}/network', {
      params: { path: { id: requirement.id } },
      body: { allow: ['*.', 'pypi.org'] },
    });
    expect(refused.response.status).toBe(400);
    expect(
      (await ok(manager.api.GET('/api/requirements/{id}/network', { params: { path: { id: requirement.id } } }))).allow,
    ).toEqual([]);
    const missing = await manager.api.PUT('/api/requirements/{id}/network', {
      params: { path: { id: 'req_00000000-0000-4000-8000-000000000000' } },
      body: { allow: ['pypi.org'] },
    });
    expect(missing.response.status).toBe(404);
  });
});
