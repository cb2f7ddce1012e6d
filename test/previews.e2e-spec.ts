import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';

import type { Preview } from '@libs/contracts';
import type { RunningManager } from '@server/manager';

import { apiClient, ok, refusal } from './support/api';
import { WORKTREE_AGENT, createRequirement, git, initRepository, say, settled, sh, startRun } from './support/git-repo';
import { startWorktreeManager } from './support/in-process';
import { Sandbox, makeSandbox, startManager } from './support/manager-process';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';

jest.setTimeout(120_000);

// The person's run script, as their base branch has it: a tiny server on AGENT_MANAGER_PORT that
// answers with its working copy's who.txt.
const RUN_SCRIPT = `#!/bin/sh
echo "serving $(cat who.txt) on $AGENT_MANAGER_PORT"
exec node -e 'const fs = require("fs"); require("http").createServer((q, s) => s.end(fs.readFileSync("who.txt", "utf8").trim())).listen(Number(process.env.AGENT_MANAGER_PORT), "127.0.0.1", () => console.log("listening"))'
`;

/** GET on the host's loopback: the body, or the error's code. */
function fetchText(url: string): Promise<string> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(body));
      res.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/** Every living process below `pid` (and itself). */
function tree(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const name of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z') {
        parents.set(Number(name), Number(fields[1]));
      }
    } catch {
      // gone
    }
  }
  const found = parents.has(pid) ? [pid] : [];
  for (let i = 0; i < found.length; i++) {
    for (const [child, parent] of parents) {
      if (parent === found[i]) {
        found.push(child);
      }
    }
  }
  return found;
}

const alive = (pid: number) =>
  fs.existsSync(`/proc/${pid}`) && !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));

/**
 * Issue 48 §2–§3: a Requirement's preview runs the person's run script (from their base branch,
 * never the agent's) in its own working copy, in its agent's sandbox and network namespace, on
 * its own ports, served on the host's loopback; its output is kept and streamed; it stops with
 * its whole tree, says why it ended, and its agent starts and reaches it. A real in-process
 * server, a real SQLite file, bubblewrap, real child processes, real SSE.
 */
describe('previews', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  const api = () => apiClient(manager.url);
  let first = '';
  let second = '';

  const preview = (id: string) => ok(api().GET('/api/requirements/{id}/preview', { params: { path: { id } } }));
  const start = (id: string) => api().POST('/api/requirements/{id}/preview', { params: { path: { id } } });
  const stop = (id: string) => ok(api().DELETE('/api/requirements/{id}/preview', { params: { path: { id } } }));
  const settles = (id: string, states: Preview['state'][]) =>
    until(`the preview of ${id} to be ${states.join(' or ')}`, async () => {
      const now = await preview(id);
      return states.includes(now.state) ? now : undefined;
    });
  const patch = async (values: Record<string, unknown>) =>
    expect((await api().PATCH('/api/configuration', { body: values })).status).toBe(200);
  const worktreeOf = async (id: string) =>
    (await ok(api().GET('/api/requirements/{id}', { params: { path: { id } } }))).worktree!;

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, {
      '.agent-manager/run': RUN_SCRIPT,
      'README.md': '# repo\n',
      'who.txt': 'base\n',
    });
    manager = await startWorktreeManager(sandbox);
    first = (await createRequirement({ api: api() }, { title: 'First' })).id;
    second = (await createRequirement({ api: api() }, { title: 'Second' })).id;
    for (const id of [first, second]) {
      await startRun({ api: api() }, id, say('Done.'));
      await settled({ api: api() }, id, 1);
    }
    fs.writeFileSync(path.join((await worktreeOf(first)).path!, 'who.txt'), 'first copy\n');
    fs.writeFileSync(path.join((await worktreeOf(second)).path!, 'who.txt'), 'second copy\n');
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it("runs two Requirements' previews at once, each on its own ports with its own working copy, from the person's script", async () => {
    // What the agent wrote in its copy is not what runs: the script comes from the base branch.
    fs.writeFileSync(path.join((await worktreeOf(first)).path!, '.agent-manager', 'run'), 'echo hijacked; exit 9\n');
    const events = await connectSse(`${manager.url}/api/events`);
    try {
      const started = await ok(start(first));
      expect(started).toMatchObject({ command: '.agent-manager/run', requirementId: first, state: 'starting' });
      await ok(start(second));
      const [a, b] = await Promise.all([settles(first, ['ready']), settles(second, ['ready'])]);
      expect(a.ports!.first).not.toBe(b.ports!.first);
      expect(a.url).toBe(`http://127.0.0.1:${a.ports!.first}`);
      expect(await fetchText(a.url!)).toBe('first copy');
      expect(await fetchText(b.url!)).toBe('second copy');
      // The output is kept, and streamed.
      const output = await ok(api().GET('/api/requirements/{id}/preview/output', { params: { path: { id: first } } }));
      expect(output.lines).toEqual(expect.arrayContaining([`serving first copy on ${a.ports!.first}`, 'listening']));
      await events.waitUntil(
        (e) =>
          e.data.type === 'preview.output' &&
          e.data.requirementId === first &&
          JSON.stringify(e.data.payload).includes('listening'),
        'the output on the stream',
      );
      await events.waitUntil(
        (e) => e.data.type === 'preview.updated' && (e.data.payload.preview as Preview).state === 'ready',
        'ready on the stream',
      );
    } finally {
      events.close();
      git((await worktreeOf(first)).path!, 'checkout', '--', '.agent-manager/run');
    }
  });

  it('stops with its whole process tree: the port closes', async () => {
    const running = await preview(first);
    const processes = tree(running.pid!);
    expect(processes.length).toBeGreaterThan(1);
    const stopped = await stop(first);
    expect(stopped).toMatchObject({ pid: null, state: 'stopped', url: null });
    // Killed, all of them (one may still be finishing its exit when the stop answers: it is not reading anything).
    await until('the tree to be gone', async () => processes.filter(alive).length === 0 || undefined, 10_000);
    expect(await fetchText(running.url!)).toBe('ECONNREFUSED');
    // The other one runs on.
    expect(await fetchText((await preview(second)).url!)).toBe('second copy');
  });

  it('says when the script exits at once, with its code and last lines; it gets only the secrets meant for previews', async () => {
    process.env.AM_PREVIEW_SECRET = 'shown-to-previews';
    process.env.AM_SETUP_SECRET = 'for-setup-only';
    await patch({
      runCommand: 'echo "given:$AM_PREVIEW_SECRET withheld:$AM_SETUP_SECRET"; echo boom >&2; exit 3',
      secrets: [{ name: 'AM_PREVIEW_SECRET', preview: true }, { name: 'AM_SETUP_SECRET' }],
    });
    try {
      await ok(start(first));
      const ended = await settles(first, ['exited']);
      expect(ended.exitCode).toBe(3);
      expect(ended.reason).toMatch(/exited with 3/);
      // The value reached it, and is masked wherever its output is kept.
      expect(ended.lastLines).toEqual(expect.arrayContaining(['given:[secret AM_PREVIEW_SECRET] withheld:', 'boom']));
    } finally {
      await patch({ runCommand: null, secrets: [] });
      delete process.env.AM_PREVIEW_SECRET;
      delete process.env.AM_SETUP_SECRET;
    }
  });

  it('is ready when a line matches readyPattern (whatever its ports do), its url carrying previewPath', async () => {
    // No server at all: only the line says it is ready.
    await patch({
      previewPath: '/app/',
      readyPattern: 'compiled \\d+ modules',
      runCommand: 'echo compiling; sleep 1; echo "compiled 42 modules"; exec sleep 60',
    });
    try {
      const started = await ok(start(first));
      expect(started.state).toBe('starting');
      const ready = await settles(first, ['ready']);
      expect(ready.url).toBe(`http://127.0.0.1:${ready.ports!.first}/app/`);
      expect(ready.lastLines).toEqual(expect.arrayContaining(['compiling', 'compiled 42 modules']));
      await stop(first);
    } finally {
      await patch({ previewPath: null, readyPattern: null, runCommand: null });
    }
  });

  it('says which program holds a port it needs', async () => {
    const ports = (await worktreeOf(first)).ports!;
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(ports.first, '127.0.0.1', resolve));
    try {
      const answer = await ok(start(first));
      expect(answer.state).toBe('exited');
      // The holder is this test's process (which is also an Agent Manager: it runs one in-process).
      expect(answer.reason).toMatch(new RegExp(`^port ${ports.first} is in use by .+\\(pid ${process.pid}[,)]`));
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });

  it('refuses what it cannot do, writing nothing', async () => {
    const fresh = (await createRequirement({ api: api() }, { title: 'Never ran' })).id;
    await refusal(start(fresh), 409, 'no_worktree');
    expect(await preview(fresh)).toMatchObject({ ports: null, state: 'stopped' });
    await refusal(start('req_missing'), 404);
    // A base without a run script and no runCommand: nothing to run, said so.
    const other = makeSandbox();
    try {
      initRepository(other.workspace, { 'README.md': '# no script\n' });
      const bare = await startWorktreeManager(other);
      try {
        const id = (await createRequirement({ api: apiClient(bare.url) }, { title: 'No script' })).id;
        await startRun({ api: apiClient(bare.url) }, id, say('Done.'));
        await settled({ api: apiClient(bare.url) }, id, 1);
        await refusal(
          apiClient(bare.url).POST('/api/requirements/{id}/preview', { params: { path: { id } } }),
          409,
          'no_run_script',
        );
      } finally {
        await bare.stop();
      }
    } finally {
      other.cleanup();
    }
    // A readyPattern that is no regular expression is refused with the field named.
    const bad = await api().PATCH('/api/configuration', { body: { readyPattern: '([' } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.error)).toContain('readyPattern');
  });

  it('keeps to maxPreviews by stopping the oldest idle one, with the reason', async () => {
    // Two starts at once (a double click): one after the other, the second a restart; one preview runs.
    const [one, two] = await Promise.all([ok(start(first)), ok(start(first))]);
    expect([one.state, two.state]).toEqual(['starting', 'starting']);
    const running = await settles(first, ['ready']);
    expect(running.startedAt).toBe(two.startedAt);
    expect(await fetchText(running.url!)).toBe('first copy');
    expect((await preview(second)).state).toBe('ready');
    await patch({ maxPreviews: 1 });
    try {
      const third = (await createRequirement({ api: api() }, { title: 'Third' })).id;
      await startRun({ api: api() }, third, say('Done.'));
      await settled({ api: api() }, third, 1);
      await ok(start(third));
      await settles(third, ['ready']);
      for (const id of [first, second]) {
        const made = await preview(id);
        expect(made.state).toBe('stopped');
        expect(made.reason).toBe(`stopped to make room for Requirement ${third}'s preview (maxPreviews 1)`);
      }
      // A cancelled Requirement takes its preview with it.
      await ok(api().POST('/api/requirements/{id}/cancel', { params: { path: { id: third } } }));
      const ended = await settles(third, ['stopped']);
      expect(ended.reason).toBe('the Requirement was cancelled');
    } finally {
      await patch({ maxPreviews: 4 });
    }
  });

  it("lets its agent start it and reach it, through the run's own proxy", async () => {
    await stop(first);
    const ports = (await worktreeOf(first)).ports!;
    // In the agent's sandbox: start through code-factory-cli, then curl through the proxy variables.
    await startRun(
      { api: api() },
      first,
      sh(
        `code-factory-cli preview start --wait 60 > started.json && curl -sS --max-time 10 "http://127.0.0.1:${ports.first}/" > seen.txt`,
      ),
    );
    await settled({ api: api() }, first, 2);
    const copy = (await worktreeOf(first)).path!;
    expect(JSON.parse(fs.readFileSync(path.join(copy, 'started.json'), 'utf8'))).toMatchObject({ state: 'ready' });
    expect(fs.readFileSync(path.join(copy, 'seen.txt'), 'utf8')).toBe('first copy');
    // Another Requirement's run credential is refused it.
    const other = await api().GET('/api/agent/requirements/{id}/preview', { params: { path: { id: second } } });
    expect(other.status).toBe(403);
  });
});

/**
 * A manager killed outright leaves its previews running (nothing ends them but the manager); its
 * next start ends them before anything else. A real manager process.
 */
describe('previews after a crash', () => {
  it('are ended by the next start', async () => {
    const sandbox = makeSandbox();
    try {
      initRepository(sandbox.workspace, {
        '.agent-manager/run': RUN_SCRIPT,
        'README.md': '# repo\n',
        'who.txt': 'crash\n',
      });
      const env = { CODE_FACTORY_CLAUDE_EXECUTABLE: WORKTREE_AGENT, CODE_FACTORY_CODEX_EXECUTABLE: WORKTREE_AGENT };
      const manager = await startManager({ env, sandbox });
      const id = (await createRequirement(manager, { title: 'Crash' })).id;
      await startRun(manager, id, say('Done.'));
      await settled(manager, id, 1);
      await ok(manager.api.POST('/api/requirements/{id}/preview', { params: { path: { id } } }));
      const ready = await until('ready', async () => {
        const now = await ok(manager.api.GET('/api/requirements/{id}/preview', { params: { path: { id } } }));
        return now.state === 'ready' ? now : undefined;
      });
      const processes = tree(ready.pid!);
      await manager.kill9();
      // Nothing ended them: the sandbox outlives the manager.
      expect(processes.filter(alive).length).toBeGreaterThan(1);
      const again = await startManager({ env, sandbox });
      try {
        // Ended before the manager served anything (one may still be finishing its exit).
        await until('the orphans to be gone', async () => processes.filter(alive).length === 0 || undefined, 10_000);
        expect(await ok(again.api.GET('/api/requirements/{id}/preview', { params: { path: { id } } }))).toMatchObject({
          state: 'stopped',
        });
      } finally {
        await again.stop();
      }
    } finally {
      sandbox.cleanup();
    }
  });
});
