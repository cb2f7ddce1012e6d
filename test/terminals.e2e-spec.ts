import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';

import type { RunningManager } from '@server/manager';

import { apiClient, ok, refusal } from './support/api';
import { createRequirement, initRepository, say, settled, startRun } from './support/git-repo';
import { FakeClock } from './support/fake-clock';
import { authHeaders, sendUntyped } from './support/http';
import { startWorktreeManager } from './support/in-process';
import { Sandbox, makeSandbox } from './support/manager-process';
import { until } from './support/wait';

jest.setTimeout(120_000);

interface Screen {
  /** Everything the terminal printed so far, decoded. */
  text(): string;
  closed: Promise<string>;
  close(): void;
}

/** The terminal's stream as a page reads it: base64 frames, then `closed` with the reason. */
function attach(origin: string, terminalId: string): Promise<Screen> {
  return new Promise((resolve, reject) => {
    let text = '';
    let closedWith: (reason: string) => void = () => undefined;
    const closed = new Promise<string>((r) => (closedWith = r));
    const url = `${origin}/api/terminals/${terminalId}/stream`;
    const req = http.get(url, { agent: false, headers: authHeaders(url, { Accept: 'text/event-stream' }) }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`stream answered ${res.statusCode}`));
        return;
      }
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (/^event: closed$/m.test(block)) {
            closedWith((JSON.parse(data ?? '{}') as { reason: string }).reason);
          } else if (data !== undefined) {
            text += Buffer.from(data, 'base64').toString('utf8');
          }
        }
      });
      res.on('end', () => closedWith('ended'));
      resolve({ close: () => req.destroy(), closed, text: () => text });
    });
    req.on('error', () => closedWith('error'));
  });
}

/**
 * Issue 48 §4: a terminal on a Requirement's working copy runs a shell there, as the person but
 * inside the agent's sandbox (it cannot read the data directory), is resized like a window,
 * replays its scrollback to a page that comes back, and closes on request, when its shell exits,
 * and when its page has gone. A real in-process server, bubblewrap, a real pseudo-terminal.
 */
describe('terminals', () => {
  let sandbox: Sandbox;
  let manager: RunningManager;
  const clock = new FakeClock();
  const api = () => apiClient(manager.url);
  let ran = '';
  let copy = '';

  const open = (id: string, size?: { rows: number; cols: number }) =>
    api().POST('/api/requirements/{id}/terminals', { body: size ?? {}, params: { path: { id } } });
  const type = (terminalId: string, data: string) =>
    ok(api().POST('/api/terminals/{terminalId}/input', { body: { data }, params: { path: { terminalId } } }), 204);
  const shows = (screen: Screen, text: string) =>
    until(`the terminal to show ${JSON.stringify(text)}`, async () => screen.text().includes(text) || undefined).catch(
      (err: Error) => {
        throw new Error(`${err.message}; it shows:\n${screen.text().slice(-3000)}`);
      },
    );

  beforeAll(async () => {
    sandbox = makeSandbox();
    initRepository(sandbox.workspace, { 'README.md': '# repo\n' });
    manager = await startWorktreeManager(sandbox, clock);
    ran = (await createRequirement({ api: api() }, { title: 'Has a working copy' })).id;
    await startRun({ api: api() }, ran, say('Done.'));
    await settled({ api: api() }, ran, 1);
    copy = (await ok(api().GET('/api/requirements/{id}', { params: { path: { id: ran } } }))).worktree!.path!;
  });

  afterAll(async () => {
    await manager?.stop();
    sandbox?.cleanup();
  });

  it('runs a shell in the working copy, inside the sandbox, sized and resized like a window', async () => {
    const terminal = await ok(open(ran, { cols: 100, rows: 30 }), 201);
    expect(terminal).toMatchObject({ cols: 100, requirementId: ran, rows: 30 });
    const screen = await attach(manager.url, terminal.id);
    try {
      const dataDirectory = path.join(
        sandbox.home,
        'workspaces',
        fs.readdirSync(path.join(sandbox.home, 'workspaces'))[0],
      );
      expect(fs.existsSync(path.join(dataDirectory, 'token'))).toBe(true);
      await type(terminal.id, 'pwd; git -c color.ui=never status --short --branch; stty size\n');
      await shows(screen, copy);
      await shows(screen, '## agent/');
      await shows(screen, '30 100');
      // The person's data is not there for it: the token, the database, the logs.
      await type(
        terminal.id,
        `ls ${dataDirectory} | wc -l; cat ${path.join(dataDirectory, 'token')} || echo "no token" "here"\n`,
      );
      // The words are split in the command, so its echo cannot satisfy the wait.
      await shows(screen, 'no token here');
      expect(screen.text()).not.toContain(fs.readFileSync(path.join(dataDirectory, 'token'), 'utf8').trim());
      // Its pseudo-terminal is in a /dev of its own: no other sandbox (an agent's) can open it.
      await type(terminal.id, "stat -c 'pts-dev:%d' /dev/pts/\n");
      // Wait for the whole answer (up to its line's end), not the echo of the command (`pts-dev:%d`).
      const inside = await until(
        'the terminal to show its /dev/pts device',
        async () => /pts-dev:(\d+)\r?\n/.exec(screen.text())?.[1],
      );
      expect(inside).toBeDefined();
      expect(Number(inside)).not.toBe(fs.statSync('/dev/pts').dev);
      await ok(
        api().POST('/api/terminals/{terminalId}/resize', {
          body: { cols: 120, rows: 40 },
          params: { path: { terminalId: terminal.id } },
        }),
        204,
      );
      await type(terminal.id, 'stty size\n');
      await shows(screen, '40 120');
      expect(await ok(api().GET('/api/requirements/{id}/terminals', { params: { path: { id: ran } } }))).toEqual({
        items: [{ ...terminal, cols: 120, rows: 40 }],
      });
      // A page that comes back gets what was on the screen.
      const again = await attach(manager.url, terminal.id);
      await shows(again, '40 120');
      again.close();
      await ok(api().DELETE('/api/terminals/{terminalId}', { params: { path: { terminalId: terminal.id } } }), 204);
      expect(await screen.closed).toBe('closed');
      expect(await ok(api().GET('/api/requirements/{id}/terminals', { params: { path: { id: ran } } }))).toEqual({
        items: [],
      });
    } finally {
      screen.close();
    }
  });

  it('closes when its shell exits, and when its page has gone', async () => {
    const exiting = await ok(open(ran), 201);
    const screen = await attach(manager.url, exiting.id);
    await type(exiting.id, 'exit 4\n');
    expect(await screen.closed).toBe('the shell exited (4)');

    // A Requirement that ends takes its terminals with it.
    const doomed = (await createRequirement({ api: api() }, { title: 'Will be cancelled' })).id;
    await startRun({ api: api() }, doomed, say('Done.'));
    await settled({ api: api() }, doomed, 1);
    const onDoomed = await ok(open(doomed), 201);
    const doomedScreen = await attach(manager.url, onDoomed.id);
    await ok(api().POST('/api/requirements/{id}/cancel', { params: { path: { id: doomed } } }));
    expect(await doomedScreen.closed).toBe('its Requirement ended');

    const left = await ok(open(ran), 201);
    const page = await attach(manager.url, left.id);
    await type(left.id, 'echo still here\n');
    await shows(page, 'still here');
    page.close();
    // Its 10 s of grace passed on the manager's clock (moved until the server has seen the page go).
    await until(
      'the terminal to close after its page went',
      async () => {
        clock.advance(11_000);
        const listed = await ok(api().GET('/api/requirements/{id}/terminals', { params: { path: { id: ran } } }));
        return listed.items.length === 0 || undefined;
      },
      30_000,
      200,
    );
  });

  it('refuses what it cannot do', async () => {
    const fresh = (await createRequirement({ api: api() }, { title: 'Never ran' })).id;
    await refusal(open(fresh), 409, 'no_worktree');
    await refusal(open('req_missing'), 404);
    await refusal(
      api().POST('/api/terminals/{terminalId}/input', {
        body: { data: 'ls\n' },
        params: { path: { terminalId: 'term_nope' } },
      }),
      404,
      'terminal_not_found',
    );
    const huge = await sendUntyped(manager.url, 'POST', `/api/requirements/${ran}/terminals`, { rows: 0, cols: 5000 });
    expect(huge.status).toBe(400);
  });
});
