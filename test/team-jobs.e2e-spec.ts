import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { storedExtension } from '@server/attachments/file-signature';
import { boardNameFromOrigin, boardSchema } from '@server/core/board/board-name';

import { onPostgres } from './support/db-snapshot';
import { ok, upload } from './support/api';
import { FakeGitHubServer } from './support/fake-github-server';
import { git, makeBareOrigin } from './support/git-repo';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { AGENT_CLI_BIN, ModelStub, codexEnvironment } from './support/model-stub';
import { dropSchemasSync, schemaQuery } from './support/postgres';
import { until } from './support/wait';

const CODEX = path.join(AGENT_CLI_BIN, 'codex');
const REPO = 'Org/Repo';
/** Each runner's own GitHub token: the fake server's recorded `authorization` says which runner asked. */
const TOKENS = { Ada: 'ghp_token_of_ada', Bob: 'ghp_token_of_bob' } as const;
type Person = keyof typeof TOKENS;
/** A runner's board lease (BOARD_LEASE_MS): a killed leader's jobs move within two of them. */
const LEASE_MS = 15_000;

/**
 * Team mode (issue 29), the board's jobs across runners, with real processes: two people's
 * managers on one PostgreSQL board, each with its own home, clone, GitHub token and logged-in
 * Codex CLI (the real one, against the model stub). The GitHub reconciler polls from exactly one
 * runner and moves on kill -9; an attachment uploaded on one runner reaches the agent of a run on
 * the other. Runs with TEST_DATABASE_URL (`npm run test:postgres`).
 */
(onPostgres() ? describe : describe.skip)('team mode: the board’s jobs on two runners', () => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'am-e2e-team-jobs-'));
  const origin = path.join(base, 'origin.git');
  const schema = boardSchema(boardNameFromOrigin(origin));
  let github: FakeGitHubServer;
  let stub: ModelStub;
  const sandboxes: Partial<Record<Person, Sandbox>> = {};
  const runners: Partial<Record<Person, ManagerProcess>> = {};
  const runner = (person: Person) => runners[person] as ManagerProcess;

  const startRunner = (person: Person) => {
    const sandbox = makeSandbox();
    sandboxes[person] = sandbox;
    fs.rmSync(sandbox.workspace, { force: true, recursive: true });
    git(base, 'clone', '-q', origin, sandbox.workspace);
    // Each person's own Codex home, logged in to the one stub.
    const agentEnv = codexEnvironment(stub, fs.mkdtempSync(path.join('/var/tmp', `am-team-jobs-${person}-`)));
    return startManager({
      args: ['--board', '--person-name', person],
      env: {
        ...agentEnv,
        CODE_FACTORY_CODEX_EXECUTABLE: CODEX,
        CODE_FACTORY_GITHUB_API_URL: github.url,
        // The shortest interval the configuration allows: several polls in a few seconds.
        CODE_FACTORY_PULL_REQUEST_RECONCILE_INTERVAL_SECONDS: '1',
        GH_TOKEN: '',
        GITHUB_TOKEN: TOKENS[person],
      },
      sandbox,
    });
  };
  const boardQuery = <T>(sql: string, params: unknown[] = []): Promise<T[]> => schemaQuery<T>(schema, sql, params);
  const create = (person: Person, title: string) =>
    ok(runner(person).api.POST('/api/requirements', { body: { description: 'd', provider: 'codex', title } }), 201);
  const runsOf = async (person: Person, requirementId: string) =>
    (
      await ok(runner(person).api.GET('/api/runs', { params: { query: { limit: 50, requirementId } } }))
    ).items.reverse(); // oldest first
  /** Waits until `count` runs of the Requirement exist and none is running; oldest first. */
  const settled = (person: Person, requirementId: string, count: number) =>
    until(
      `${count} settled runs`,
      async () => {
        const runs = await runsOf(person, requirementId);
        return runs.length >= count && runs.every((r) => r.status !== 'running') && runs;
      },
      90_000,
      200,
    );

  beforeAll(async () => {
    makeBareOrigin(base);
    // No token required: any is answered, and each request keeps the one it came with.
    github = await FakeGitHubServer.start();
    stub = await ModelStub.start();
    const [ada, bob] = await Promise.all([startRunner('Ada'), startRunner('Bob')]);
    runners.Ada = ada;
    runners.Bob = bob;
  });

  afterAll(async () => {
    await Promise.all(Object.values(runners).map((r) => r?.stop()));
    await github?.close();
    await stub?.close();
    Object.values(sandboxes).forEach((s) => s?.cleanup());
    dropSchemasSync([schema]);
    fs.rmSync(base, { force: true, recursive: true });
  });

  it('delivers an attachment uploaded on A to the agent of a run on B: B writes its copy from the board, and the real Codex CLI reads it there', async () => {
    const requirement = await create('Ada', 'runs on Bob');
    // Started on B: B is its runner (a Requirement runs where it first started).
    stub.scriptFor(requirement.id, [{ text: 'Ready for the notes.' }]);
    await ok(
      runner('Bob').api.POST('/api/requirements/{id}/start', {
        body: { message: `Wait for the notes ${requirement.id}` },
        params: { path: { id: requirement.id } },
      }),
      202,
    );
    const [first] = await settled('Bob', requirement.id, 1);
    expect(first).toMatchObject({ error: null, status: 'succeeded' });
    // A learns of B's runner at its next heartbeat (a third of a lease period at most).
    const started = await until(
      "A shows B's runner",
      async () => {
        const seen = await ok(
          runner('Ada').api.GET('/api/requirements/{id}', { params: { path: { id: requirement.id } } }),
        );
        return seen.runner?.online ? seen : undefined;
      },
      20_000,
      200,
    );
    expect(started.runner).toMatchObject({ person: 'Bob' });
    expect(started.session.state).toBe('waiting_human');

    // Uploaded through A: A keeps the upload's file as its own copy; B has none yet.
    const content = `notes from Ada ${randomUUID()}\n`;
    const attachment = await ok(upload(runner('Ada').api, requirement.id, 'notes.txt', content), 201);
    const name = `${attachment.id}${storedExtension(attachment.kind, attachment.mediaType, attachment.fileName)}`;
    const onA = path.join(runner('Ada').dataDirectory(), 'attachments', name);
    const onB = path.join(runner('Bob').dataDirectory(), 'attachments', name);
    expect(onB).not.toBe(onA);
    expect(fs.readFileSync(onA, 'utf8')).toBe(content);
    expect(fs.existsSync(onB)).toBe(false);

    // Ada's reply with the attachment, sent to A, wakes the session on B; its agent prints the file it was given.
    stub.scriptFor(requirement.id, [{ shell: `cat ${onB}` }, { text: 'Read the notes.' }]);
    const replied = await ok(
      runner('Ada').api.POST('/api/requirements/{id}/reply', {
        body: { attachmentIds: [attachment.id], message: `Here are the notes ${requirement.id}` },
        params: { path: { id: requirement.id } },
      }),
      202,
    );
    expect(replied.queued).toBe(true); // it runs on B, not here
    const [, second] = await settled('Bob', requirement.id, 2);
    expect(second.status).toBe('succeeded');

    // B wrote its local copy from the database, byte for byte.
    expect(fs.readFileSync(onB, 'utf8')).toBe(content);
    const asked = stub.requests.filter((r) => r.marker === requirement.id);
    // The run's prompt named the copy on B's disk (not A's)…
    const prompted = asked.findIndex((r) => r.transcript.includes(onB));
    expect(prompted).toBeGreaterThanOrEqual(0);
    expect(asked.some((r) => r.transcript.includes(onA))).toBe(false);
    // …and the CLI, on B, read it: `cat`'s output is the tool result it sent the model next (the
    // content is in no prompt: only the file holds it).
    const secret = content.trim();
    expect(asked[prompted].transcript).not.toContain(secret);
    const toolResult = (transcript: string) => transcript.slice(Math.max(0, transcript.lastIndexOf('tool_result:')));
    expect(
      asked
        .slice(prompted + 1)
        .some((r) => r.transcript.includes('tool_result:') && toolResult(r.transcript).includes(secret)),
    ).toBe(true);
    const messages = await ok(
      runner('Ada').api.GET('/api/requirements/{id}/messages', {
        params: { path: { id: requirement.id }, query: { limit: 50 } },
      }),
    );
    expect(messages.items.map((m) => [m.author, m.body])).toContainEqual(['rd_agent', 'Read the notes.']);
    // Both runs were B's: its runner stayed B, and the board holds exactly those two.
    expect(
      (await ok(runner('Ada').api.GET('/api/requirements/{id}', { params: { path: { id: requirement.id } } }))).runner,
    ).toMatchObject({ person: 'Bob' });
    expect(
      await boardQuery<{ n: number }>('SELECT COUNT(*)::int AS n FROM agent_run WHERE requirement_id = $1', [
        requirement.id,
      ]),
    ).toEqual([{ n: 2 }]);
  }, 150_000);

  it('polls GitHub for pull requests from the leader only, and from the other runner within two lease periods of a kill -9 of the leader', async () => {
    const requirement = await create('Ada', 'has a pull request');
    const pr = github.addPullRequest({ number: 7, repository: REPO });
    await ok(
      runner('Ada').api.POST('/api/agent/pull-requests', {
        body: {
          baseBranch: pr.baseBranch,
          headBranch: pr.headBranch,
          headSha: pr.headSha,
          number: 7,
          repository: REPO,
          requirementId: requirement.id,
          status: 'open',
          title: pr.title,
          url: `https://github.com/${REPO}/pull/7`,
        },
      }),
      200,
    );
    /** The reconciler's polls (its summary queries) made with `person`'s token, and every request with it. */
    const polls = (person: Person, since = 0) =>
      github.requests.filter(
        (r) => r.at >= since && r.query === 'summary' && r.authorization?.includes(TOKENS[person]),
      );
    const requestsOf = (person: Person, since = 0) =>
      github.requests.filter((r) => r.at >= since && r.authorization?.includes(TOKENS[person]));

    const row = await until(
      'a runner to lead',
      async () =>
        (
          await boardQuery<{ person_name: Person }>(
            'SELECT person_name FROM am_runner WHERE stopped_at IS NULL AND leader_since IS NOT NULL',
          )
        )[0],
      30_000,
      200,
    );
    const leader: Person = row.person_name;
    const follower: Person = leader === 'Ada' ? 'Bob' : 'Ada';

    // Several intervals (1 s each) of polling: every one of them the leader's.
    await until('the leader to poll five times', async () => polls(leader).length >= 5, 30_000, 100);
    expect(requestsOf(follower)).toEqual([]);
    expect(
      (
        await ok(
          runner(follower).api.GET('/api/pull-requests', { params: { query: { requirementId: requirement.id } } }),
        )
      ).items,
    ).toHaveLength(1);

    // kill -9 of the leader: its session ends with it, the follower takes the lock at its next heartbeat and polls.
    const killedAt = Date.now();
    await runner(leader).kill9();
    const firstPoll = await until(
      'the other runner to poll',
      async () => polls(follower, killedAt)[0],
      2 * LEASE_MS + 10_000,
      100,
    );
    expect(firstPoll.at - killedAt).toBeLessThan(2 * LEASE_MS);
    // And it keeps polling, alone: nothing came with the dead runner's token since (a request it had
    // sent before dying may still be read just after the kill).
    await until(
      'the other runner to poll three more times',
      async () => polls(follower, firstPoll.at + 1).length >= 3,
      30_000,
      100,
    );
    expect(requestsOf(leader, killedAt + 2_000)).toEqual([]);
    const [now] = await boardQuery<{ person_name: string }>(
      `SELECT person_name FROM am_runner WHERE stopped_at IS NULL AND heartbeat_at > now() - interval '15 seconds' AND leader_since IS NOT NULL ORDER BY leader_since DESC LIMIT 1`,
    );
    expect(now?.person_name).toBe(follower);
  }, 120_000);
});
