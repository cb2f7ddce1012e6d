import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { ok } from './support/api';
import { createRequirement, initRepository, reply } from './support/git-repo';
import { ManagerProcess, Sandbox, makeSandbox, startManager } from './support/manager-process';
import { type SseEvent, connectSse } from './support/sse-client';

// Issue 29 (team mode), people as actors, against the real built server: the manager resolves its
// person once at start (configuration, else git's global identity in the HOME the manager runs
// with, else the OS account); every event a request with the owner's token causes names that
// person, and so does every message they write. The repository's own configuration — which an
// agent can write — never names anyone, and whatever git says is bounded and stripped of controls.

jest.setTimeout(120_000);

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** A HOME of its own: git's global configuration is `<home>/.gitconfig` and nothing else. */
function personHome(base: string, identity: { name?: string; email?: string }): NodeJS.ProcessEnv {
  const home = path.join(base, 'person-home');
  fs.mkdirSync(home, { recursive: true });
  const file = path.join(home, '.gitconfig');
  fs.writeFileSync(file, '');
  for (const [key, value] of Object.entries(identity)) {
    if (value !== undefined) {
      execFileSync('git', ['config', '--file', file, `user.${key}`, value]);
    }
  }
  // The test runner's own identity (its HOME, XDG or GIT_CONFIG_GLOBAL, the system file) must not leak in.
  return {
    GIT_CONFIG_GLOBAL: undefined,
    GIT_CONFIG_NOSYSTEM: '1',
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
  };
}

describe('people as actors (issue 29)', () => {
  let sandbox: Sandbox;
  let manager: ManagerProcess | undefined;

  beforeEach(() => {
    sandbox = makeSandbox();
  });

  afterEach(async () => {
    await manager?.stop();
    manager = undefined;
    sandbox?.cleanup();
  });

  const person = async (): Promise<Json> => (await ok(manager!.api.GET('/api/workspace'))).person;

  /** A person's reply, and its message.created event as the store gives it back (replayed from id 0). */
  async function replyAndItsEvent(body: string): Promise<{ message: Json; event: SseEvent }> {
    const requirement = await createRequirement(manager!, { title: 'who wrote this' });
    await reply(manager!, requirement.id, body);
    const messages = (
      await ok(manager!.api.GET('/api/requirements/{id}/messages', { params: { path: { id: requirement.id } } }))
    ).items as Json[];
    const message = messages.find((m) => m.body === body)!;
    const replay = await connectSse(`${manager!.origin}/api/events?after=0`);
    const event = await replay.waitUntil(
      (e) => e.data.type === 'message.created' && (e.data.payload as Json).message.id === message.id,
      'the reply’s event',
    );
    replay.close();
    return { event, message };
  }

  it("names the person from git's global identity on the reply's message and event, and on a configuration change", async () => {
    initRepository(sandbox.workspace);
    manager = await startManager({
      env: personHome(sandbox.workspace + '-x', { email: 'ada@example.com', name: 'Ada Lovelace' }),
      sandbox,
    });
    const you = await person();
    expect(you).toEqual({
      email: 'ada@example.com',
      id: expect.stringMatching(/^person_[0-9a-f]{24}$/),
      name: 'Ada Lovelace',
      source: 'git',
    });

    const { event, message } = await replyAndItsEvent('from Ada');
    expect(message).toMatchObject({ author: 'human', authorId: you.id, authorName: 'Ada Lovelace' });
    expect(event.data.actor).toEqual({ email: 'ada@example.com', id: you.id, kind: 'human', name: 'Ada Lovelace' });

    // A change that affects everyone is audited with the person as its actor.
    const live = await connectSse(`${manager.origin}/api/events`);
    await ok(manager.api.PATCH('/api/configuration', { body: { doneRequirementRetentionDays: 30 } }));
    const changed = await live.waitUntil(
      (e) => e.data.type === 'manager.configuration.updated',
      'the configuration change',
    );
    live.close();
    expect(changed.data.actor).toEqual({ email: 'ada@example.com', id: you.id, kind: 'human', name: 'Ada Lovelace' });

    // The id is the person's, not this manager's: another start (here, after a restart) gives the same one.
    await manager.stop();
    manager = await startManager({
      env: personHome(sandbox.workspace + '-x', { email: 'ADA@example.com', name: 'Ada L.' }),
      sandbox,
    });
    expect(await person()).toMatchObject({ id: you.id, name: 'Ada L.' });
  });

  it('lets the configuration (environment and start flag) name the person instead of git', async () => {
    initRepository(sandbox.workspace);
    manager = await startManager({
      args: ['--person-email', 'grace@example.com'],
      env: {
        ...personHome(sandbox.workspace + '-x', { email: 'ada@example.com', name: 'Ada Lovelace' }),
        CODE_FACTORY_PERSON_NAME: 'Grace Hopper',
      },
      sandbox,
    });
    const you = await person();
    expect(you).toMatchObject({ email: 'grace@example.com', name: 'Grace Hopper', source: 'configuration' });
    const { event, message } = await replyAndItsEvent('from Grace');
    expect(message).toMatchObject({ authorId: you.id, authorName: 'Grace Hopper' });
    expect(event.data.actor).toMatchObject({
      email: 'grace@example.com',
      id: you.id,
      kind: 'human',
      name: 'Grace Hopper',
    });
    const configuration = await ok(manager.api.GET('/api/configuration'));
    expect(configuration.effective).toMatchObject({ personEmail: 'grace@example.com', personName: 'Grace Hopper' });
    expect(configuration.overriddenFields).toEqual(expect.arrayContaining(['personEmail', 'personName']));
    // A name with control characters is refused where it is set, with nothing written.
    const refused = await manager.api.PATCH('/api/configuration', { body: { personName: 'Eve\u001b[2J' } });
    expect(refused.response.status).toBe(400);
    expect((await ok(manager.api.GET('/api/configuration'))).values.personName).toBeNull();
  });

  it('bounds and cleans what git says, and never takes a name from the repository’s own configuration', async () => {
    initRepository(sandbox.workspace);
    // What an agent could write into the shared .git/config: never read for the person.
    execFileSync('git', ['config', 'user.name', 'Mallory the agent'], { cwd: sandbox.workspace });
    execFileSync('git', ['config', 'user.email', 'mallory@example.com'], { cwd: sandbox.workspace });
    const hostile = `${'A'.repeat(5000)}\u001b[31m\u202e\nX-Injected: yes\r\u0007`;
    manager = await startManager({
      env: personHome(sandbox.workspace + '-x', { email: 'not an email\u0007@x', name: hostile }),
      sandbox,
    });
    const you = await person();
    expect(you.source).toBe('git');
    expect(you.name).toBe('A'.repeat(100));
    expect(you.email).toBeNull();
    const { event, message } = await replyAndItsEvent('from a long name');
    for (const name of [message.authorName as string, (event.data.actor as Json).name as string]) {
      expect(name).toHaveLength(100);
      expect(name).not.toMatch(CONTROLS);
      expect(name).not.toContain('Mallory');
    }
    // A shorter hostile value keeps its text but loses its controls: one plain line.
    await manager.stop();
    manager = await startManager({
      env: personHome(sandbox.workspace + '-y', { name: 'Eve\u001b[31m\u202e\nX-Injected: yes\u0007' }),
      sandbox,
    });
    const eve = await person();
    expect(eve.name).toBe('Eve [31m X-Injected: yes');
    expect(eve.name).not.toMatch(CONTROLS);
  });

  it('falls back to the OS account when git has no identity (the repository’s is not one)', async () => {
    initRepository(sandbox.workspace); // sets user.name "Person" in the repository's own configuration
    manager = await startManager({ env: personHome(sandbox.workspace + '-x', {}), sandbox });
    const you = await person();
    expect(you).toMatchObject({ email: null, name: os.userInfo().username, source: 'os' });
    const { event, message } = await replyAndItsEvent('from the account');
    expect(message.authorName).toBe(os.userInfo().username);
    expect(event.data.actor).toMatchObject({ email: null, id: you.id, kind: 'human', name: os.userInfo().username });
  });
});
