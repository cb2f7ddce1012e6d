import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { apiClient, ok, upload } from '../support/api';
import { ManagerProcess, ROOT, Sandbox, makeSandbox, startManager } from '../support/manager-process';
import { ModelStub, REAL_AGENT_CLIS, codexEnvironment } from '../support/model-stub';
import { until } from '../support/wait';
import { useRealAgentWorld } from '../support/real-agent-world';

// Issue 12 §4: an agent must not become the owner. The real Codex and Claude Code CLIs, scripted
// by the model stub, run a token hunt from their tool shell (test/fixtures/agents/token-hunt.js):
// every file under the data directory, CODE_FACTORY_HOME and ~/.code-factory, every process it
// can see (the manager's by PID), each token-like string tried as Bearer on an owner-only endpoint.

const HUNT = path.join(ROOT, 'test', 'fixtures', 'agents', 'token-hunt.js');

jest.setTimeout(180_000);

interface HuntJob {
  api: string;
  roots: string[];
  pids: number[];
  attachment: string | null;
  cli: boolean;
  /** Try `umount -l` on the roots first: only inside the sandbox (its own mount namespace). */
  unmount: boolean;
  /** Start the owner's MCP server (`agent-manager mcp`) and ask it to create a Requirement. */
  ownerMcp: { bin: string; workspace: string } | null;
  out: string;
}

interface HuntResult {
  filesSeen: string[];
  readable: string[];
  tried: Array<{ status: number | string; token: string; where: string }>;
  attachment?: string | null;
  cli?: { code: number | null; stdout: string; stderr: string };
  unmountTried?: boolean;
  ownerMcp?: { code: number | null; signal: string | null; stdout: string; stderr: string };
  crashed?: string;
}

/** The agent's tool command: the job travels as base64, which needs no quoting in any shell. */
const huntCommand = (job: HuntJob) =>
  `${process.execPath} ${HUNT} ${Buffer.from(JSON.stringify(job)).toString('base64')}`;

const readHunt = (file: string): HuntResult => JSON.parse(fs.readFileSync(file, 'utf8')) as HuntResult;

/** The files of a tree the hunt saw, by any way in (roots overlap; /proc/<pid>/root/… is one more). */
const seenUnder = (hunt: HuntResult, tree: string) => [
  ...new Set(hunt.filesSeen.map((f) => f.replace(/^\/proc\/\d+\/root/, '')).filter((f) => f.startsWith(`${tree}/`))),
];

function huntJob(manager: ManagerProcess, sandbox: Sandbox, name: string, extra: Partial<HuntJob> = {}): HuntJob {
  const outDir = path.join(sandbox.shared, 'hunt');
  fs.mkdirSync(outDir, { recursive: true });
  return {
    api: `${manager.origin}/api`,
    attachment: null,
    cli: false,
    out: path.join(outDir, `${name}.json`),
    ownerMcp: null,
    pids: [manager.child.pid as number],
    roots: [manager.dataDirectory(), sandbox.home, path.join(os.homedir(), '.code-factory')],
    unmount: false,
    ...extra,
  };
}

async function uploadText(
  manager: ManagerProcess,
  requirementId: string,
  text: string,
): Promise<{ id: string; file: string }> {
  const res = await upload(manager.api, requirementId, 'notes.txt', text);
  expect(res.status).toBe(201);
  const dir = path.join(manager.dataDirectory(), 'attachments');
  const stored = fs.readdirSync(dir).find((name) => name.startsWith(res.data!.id));
  return { file: path.join(dir, stored as string), id: res.data!.id };
}

async function finishedRun(
  manager: ManagerProcess,
  requirementId: string,
  role = 'rd',
): Promise<{ id: string; status: string; error: string | null }> {
  return until(
    `the ${role} run of ${requirementId} to finish`,
    async () => {
      const runs = (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId } } }))).items;
      const run = runs.find((r) => r.role === role);
      return run && run.status !== 'running' && run;
    },
    150_000,
    200,
  );
}

describe.each(REAL_AGENT_CLIS)('an agent of the real $provider CLI, in its sandbox', (cli) => {
  const { provider } = cli;
  let sandbox: Sandbox;
  let stub: ModelStub;
  let manager: ManagerProcess;
  useRealAgentWorld(cli, 'sandbox', (world) => ({ manager, sandbox, stub } = world));

  it('finds no owner token anywhere, yet reads its attachment and runs code-factory-cli; so does its reviewer', async () => {
    expect((await ok(apiClient(manager.origin, { auth: false }).GET('/api/health'))).agentIsolation).toEqual({
      enabled: true,
      mechanism: 'bubblewrap',
      reason: null,
    });
    expect(manager.stdout()).toContain('Agents      isolated (bubblewrap)');

    const requirement = await ok(manager.api.POST('/api/requirements', { body: { provider, title: 'Hunt' } }));
    const attachment = await uploadText(manager, requirement.id, 'notes for the agent\n');
    const rdJob = huntJob(manager, sandbox, `rd-${provider}`, {
      attachment: attachment.file,
      cli: true,
      ownerMcp: { bin: path.join(ROOT, 'bin', 'agent-manager.js'), workspace: sandbox.workspace },
      unmount: true,
    });
    const url = 'https://github.com/org/repo/pull/7';
    stub.scriptFor(requirement.id, [
      { shell: huntCommand(rdJob) },
      {
        shell: `code-factory-cli pr register --url ${url} --title "PR 7" --base-branch main --head-branch b7 --head-sha 7777777aaaa --status open`,
      },
      { text: 'Hunt over.' },
    ]);
    const started = await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: requirement.id } },
      body: { attachmentIds: [attachment.id], message: `Hunt ${requirement.id}` },
    });
    expect(started.status).toBe(202);
    const run = await finishedRun(manager, requirement.id);
    expect(run).toMatchObject({ error: null, status: 'succeeded' });
    // The agent learnt the attachment's path from its prompt, as it always does.
    expect(stub.requests.some((r) => r.marker === requirement.id && r.transcript.includes(attachment.file))).toBe(true);

    const rd = readHunt(rdJob.out);
    expect(rd.crashed).toBeUndefined();
    expect(rd.unmountTried).toBe(true); // and the tmpfs stayed (its capabilities are dropped)
    expect(rd.attachment).toBe('notes for the agent\n');
    expect(rd.cli?.code).toBe(0);
    expect(JSON.parse(rd.cli?.stdout ?? 'null')).toEqual(expect.objectContaining({ items: expect.any(Array) }));
    // Of the whole data directory only its own attachment is there: no token, database, config or log.
    const hiddenTree = path.join(sandbox.home, 'workspaces');
    expect(seenUnder(rd, hiddenTree)).toEqual([attachment.file]);
    // It holds its run credential (and perhaps more); none opens an owner-only endpoint.
    expect(rd.tried.length).toBeGreaterThan(0);
    expect(rd.tried.filter((t) => t.status !== 401 && t.status !== 403)).toEqual([]);
    expect(fs.readFileSync(rdJob.out, 'utf8')).not.toContain(manager.token);
    // The manager is not among the processes it can see.
    expect(rd.readable.filter((entry) => entry.includes('agent-manager.js'))).toEqual([]);
    // The owner's MCP server, started from inside, finds no owner token: no tool answers, and
    // no Requirement was created.
    expect(rd.ownerMcp).toBeDefined();
    const answers = (rd.ownerMcp?.stdout ?? '')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { id?: number; result?: { isError?: boolean } });
    // It answered as for a workspace with no manager (it cannot see the lock or token), or could
    // not start at all (it cannot create a data directory in a read-only HOME): never a success.
    const toolAnswers = answers.filter((a) => a.id === 2);
    expect(toolAnswers.filter((a) => a.result?.isError !== true)).toEqual([]);
    expect(toolAnswers.length === 1 || rd.ownerMcp?.code !== 0).toBe(true);
    const titles = (await ok(manager.api.GET('/api/requirements', { params: { query: { limit: 200 } } }))).items.map(
      (r) => r.title,
    );
    expect(titles).not.toContain('taken over by an agent');
    expect(`${rd.ownerMcp?.stdout}${rd.ownerMcp?.stderr}`).not.toContain(manager.token);

    // The reviewer runs in the same sandbox (and has no code-factory-cli or attachments at all).
    const [pr] = (
      await ok(manager.api.GET('/api/pull-requests', { params: { query: { requirementId: requirement.id } } }))
    ).items;
    const reviewerJob = huntJob(manager, sandbox, `reviewer-${provider}`, { unmount: true });
    stub.scriptFor(url, [{ shell: huntCommand(reviewerJob) }, { text: 'Review: nothing to report.' }]);
    const requested = await manager.api.POST('/api/pull-requests/{id}/review-requests', {
      params: { path: { id: pr.id } },
      body: { provider },
    });
    expect(requested.status).toBe(202);
    const review = await finishedRun(manager, requirement.id, 'reviewer');
    expect(review).toMatchObject({ status: 'succeeded' });
    const reviewer = readHunt(reviewerJob.out);
    expect(reviewer.crashed).toBeUndefined();
    expect(reviewer.unmountTried).toBe(true);
    expect(seenUnder(reviewer, hiddenTree)).toEqual([]);
    expect(reviewer.tried.filter((t) => t.status !== 401 && t.status !== 403)).toEqual([]);
    expect(fs.readFileSync(reviewerJob.out, 'utf8')).not.toContain(manager.token);
  });
});

describe('when bubblewrap is refused (no user namespaces)', () => {
  let sandbox: Sandbox;
  let stub: ModelStub;
  let manager: ManagerProcess;

  beforeAll(async () => {
    sandbox = makeSandbox();
    stub = await ModelStub.start();
    // A bwrap that fails as it does where unprivileged user namespaces are off.
    const fakeBin = path.join(path.dirname(sandbox.home), 'fake-bin');
    fs.mkdirSync(fakeBin);
    fs.writeFileSync(
      path.join(fakeBin, 'bwrap'),
      '#!/bin/sh\necho "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2\nexit 1\n',
      { mode: 0o755 },
    );
    const codex = REAL_AGENT_CLIS.find((c) => c.provider === 'codex')!;
    const agentEnv = codexEnvironment(stub, fs.mkdtempSync(path.join('/var/tmp', 'am-sandbox-off-')));
    manager = await startManager({
      env: {
        ...agentEnv,
        CODE_FACTORY_CODEX_EXECUTABLE: codex.executable,
        GH_TOKEN: '',
        GITHUB_TOKEN: '',
        PATH: `${fakeBin}${path.delimiter}${process.env.PATH ?? ''}`,
      },
      sandbox,
    });
  });

  afterAll(async () => {
    await manager?.stop();
    await stub?.close();
    sandbox?.cleanup();
  });

  it('says once, in the banner, the log and /api/health, that agents are not isolated; runs are refused (503) until the network is open, then go on as before', async () => {
    const reason =
      'bubblewrap cannot create the sandbox here (bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.); user namespaces may be disabled or restricted';
    expect((await ok(apiClient(manager.origin, { auth: false }).GET('/api/health'))).agentIsolation).toEqual({
      enabled: false,
      mechanism: null,
      reason,
    });
    expect(manager.stdout().match(/WARNING: agents are not isolated/g)).toHaveLength(1);
    expect(manager.stdout()).toContain(reason);
    expect(manager.stdout()).toContain('Agents      NOT isolated');

    const requirement = await ok(
      manager.api.POST('/api/requirements', { body: { provider: 'codex', title: 'Unprotected' } }),
    );
    const job = huntJob(manager, sandbox, 'unisolated', { cli: true });
    stub.scriptFor(requirement.id, [{ shell: huntCommand(job) }, { text: 'Done.' }]);
    // Without a sandbox there is no network of its own either: a start is refused (issue 45),
    // never run open behind the person's back, until the person chooses `open`.
    const refused = await manager.api.POST('/api/requirements/{id}/start', {
      params: { path: { id: requirement.id } },
      body: { message: `Go ${requirement.id}` },
    });
    expect(refused.response.status).toBe(503);
    expect(refused.error).toMatchObject({ code: 'network_isolation_unavailable' });
    expect((refused.error as { message: string }).message).toContain('bubblewrap cannot create the sandbox here');
    expect(
      (await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: requirement.id } } }))).items,
    ).toEqual([]);
    await ok(manager.api.PATCH('/api/configuration', { body: { networkMode: 'open' } }));
    await ok(
      manager.api.POST('/api/requirements/{id}/start', {
        params: { path: { id: requirement.id } },
        body: { message: `Go ${requirement.id}` },
      }),
    );
    expect(await finishedRun(manager, requirement.id)).toMatchObject({ status: 'succeeded' });
    const hunt = readHunt(job.out);
    expect(hunt.cli?.code).toBe(0);
    // What docs/security.md warns of: unisolated, the same hunt does find the owner token
    // (which also shows that the hunt above would have found it).
    expect(hunt.tried).toContainEqual(expect.objectContaining({ status: 200, token: manager.token }));

    // Once: at start, not again for the run.
    const log = fs.readFileSync(path.join(manager.dataDirectory(), 'logs', 'agent-manager.log'), 'utf8');
    expect(log.match(/agents are not isolated/g)).toHaveLength(1);
  });
});
