// The Node.js lines we say we support (README, `engines`): the whole suite runs on the LTS line
// .ci/run puts first on the PATH; here every line, the oldest `engines` allows included, starts
// the built manager and drives one real agent run through it. Each build comes from
// test/node-runtimes (pinned, installed by scripts/test.js), so a machine's own Node.js does not
// decide what is proven.
import * as fs from 'node:fs';
import * as path from 'node:path';

import { NODE_ENGINES } from '@server/doctor/runtime-checks';

import { initRepository } from './support/git-repo';
import { ok } from './support/api';
import { ROOT, makeSandbox, startManager } from './support/manager-process';
import { ModelStub, REAL_AGENT_CLIS, claudeEnvironment } from './support/model-stub';
import { NODE_LINES, NodeLine, nodeRuntime } from './support/node-runtimes';
import { connectSse } from './support/sse-client';
import { until } from './support/wait';

jest.setTimeout(150_000);

const CLAUDE = REAL_AGENT_CLIS.find((cli) => cli.provider === 'claude-code')!;

describe('supported Node.js lines', () => {
  let stub: ModelStub;
  beforeAll(async () => {
    stub = await ModelStub.start();
  });
  afterAll(() => stub.close());

  it('tests the oldest release `engines` allows on each line before 24', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    const pinned = JSON.parse(fs.readFileSync(path.join(ROOT, 'test', 'node-runtimes', 'package.json'), 'utf8'))
      .optionalDependencies as Record<string, string>;
    const version = (line: NodeLine) => /@(\d+\.\d+\.\d+)$/.exec(pinned[`node${line}-x64`])![1];
    expect(manifest.engines.node).toBe(`^${version(20)} || >=${version(22)}`);
    expect(manifest.engines.node).toBe(NODE_ENGINES);
  });

  it.each(NODE_LINES)(
    'Node.js %i starts the manager, serves the board and runs the real Claude Code CLI to success',
    async (line) => {
      const node = nodeRuntime(line);
      const sandbox = makeSandbox();
      initRepository(sandbox.workspace);
      const agentEnv = claudeEnvironment(stub, fs.mkdtempSync(path.join('/var/tmp', `am-node${line}-`)));
      // The agent CLI (a `#!/usr/bin/env node` script) and code-factory-cli run on the same line.
      const manager = await startManager({
        env: {
          ...agentEnv,
          CODE_FACTORY_CLAUDE_EXECUTABLE: CLAUDE.executable,
          GH_TOKEN: '',
          GITHUB_TOKEN: '',
          PATH: `${path.dirname(node)}:${process.env.PATH}`,
        },
        node,
        sandbox,
      });
      try {
        // Nothing on stderr: no engine, deprecation or experimental-feature warning on this line.
        expect(manager.stderr()).toBe('');
        const doctor = (await ok(manager.api.GET('/api/doctor'))).checks;
        expect(doctor.find((c) => c.id === 'node')).toMatchObject({
          status: 'ok',
          detail: expect.stringMatching(new RegExp(`^Node\\.js v${line}\\.`)),
        });
        const board = await fetch(`${manager.origin}/`);
        expect(board.status).toBe(200);
        expect(await board.text()).toContain('<am-root>');

        const events = await connectSse(`${manager.origin}/api/events`);
        const created = await ok(
          manager.api.POST('/api/requirements', { body: { provider: 'claude-code', title: `On Node.js ${line}` } }),
        );
        expect(created).toMatchObject({ isolation: 'worktree' });
        stub.scriptFor(created.id, [
          { shell: 'code-factory-cli requirement related' },
          { text: `Ran on Node.js ${line}.` },
        ]);
        expect(
          (
            await manager.api.POST('/api/requirements/{id}/start', {
              params: { path: { id: created.id } },
              body: { message: `Go ${created.id}` },
            })
          ).status,
        ).toBe(202);
        const run = await until(
          'the run to end',
          async () => {
            const [latest] = (
              await ok(manager.api.GET('/api/runs', { params: { query: { requirementId: created.id } } }))
            ).items;
            return latest && latest.status !== 'running' && latest;
          },
          120_000,
          250,
        );
        expect(run).toMatchObject({ status: 'succeeded', taskSummary: `Ran on Node.js ${line}.` });
        const trace = (
          await ok(manager.api.GET('/api/runs/{id}/trace', { params: { path: { id: run.id }, query: { limit: 50 } } }))
        ).items;
        const [result] = trace.filter((t) => t.kind === 'tool_result');
        expect(JSON.parse(result?.detail ?? 'null')).toEqual({ children: [], parent: null });
        await until(
          'the run to reach the event stream',
          async () =>
            events.events.some(
              (e) => e.event === 'run.succeeded' && (e.data.payload.run as { id: string }).id === run.id,
            ),
          10_000,
        );
        events.close();
      } finally {
        expect(await manager.stop()).toBe(0);
        sandbox.cleanup();
      }
    },
  );
});
