import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { ConfigurationService } from '../core/configuration/configuration.service';
import type { Runtime } from '../core/runtime';
import { resolveWorkspace } from '../core/workspace/workspace';
import { isRunning } from '../core/process-table';
import { AgentSandbox, expandHome } from './agent-sandbox';
import { bubblewrapOptions, passedDevices, seatbeltProfile } from './sandbox-arguments';
import { SandboxLayout, SandboxScope } from './sandbox-layout';
import { findRunProcesses } from './process-tree';
import { runProcess } from './process-runner';
import { createAgentRepository } from '../worktrees/agent-repository';
import { RunLimits, temporaryFull } from './run-limits';

const HAS_BWRAP = process.platform === 'linux' && fs.existsSync('/usr/bin/bwrap');

interface Fixture {
  base: string;
  runtime: Runtime;
  token: string;
  attachment: string;
  other: string;
}

/** A real home and workspace in a temp directory, with a token and two attachments on disk. */
function fixture(agentIsolation: 'auto' | 'off' = 'auto'): Fixture {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'am-sandbox-')));
  fs.mkdirSync(path.join(base, 'repo'));
  const paths = resolveWorkspace(path.join(base, 'repo'), path.join(base, 'home'));
  fs.writeFileSync(paths.lockPath, '{}');
  const token = path.join(paths.dataDirectory, 'token');
  fs.writeFileSync(token, 'a'.repeat(64));
  const attachment = path.join(paths.attachmentsDirectory, 'att_one.txt');
  const other = path.join(paths.attachmentsDirectory, 'att_other.txt');
  fs.writeFileSync(attachment, 'mine');
  fs.writeFileSync(other, 'not mine');
  const configuration = new ConfigurationService(paths.defaultConfigPath, { agentIsolation });
  return { attachment, base, other, runtime: { configuration, paths } as Partial<Runtime> as Runtime, token };
}

async function started(f: Fixture): Promise<AgentSandbox> {
  const sut = new AgentSandbox(f.runtime.configuration, f.runtime);
  await sut.onModuleInit();
  return sut;
}

async function withPath<T>(dir: string, action: () => Promise<T>): Promise<T> {
  const before = process.env.PATH;
  process.env.PATH = `${dir}${path.delimiter}${before ?? ''}`;
  try {
    return await action();
  } finally {
    process.env.PATH = before;
  }
}

describe(AgentSandbox.name, () => {
  const made: string[] = [];
  const make = (mode?: 'auto' | 'off') => {
    const f = fixture(mode);
    made.push(f.base);
    return f;
  };
  afterAll(() => made.forEach((dir) => fs.rmSync(dir, { force: true, recursive: true })));

  const layout = (over: Partial<SandboxLayout>): SandboxLayout => ({
    concealed: [],
    cwd: '/repo',
    hidden: [],
    protectedRoots: [],
    readOnly: [],
    temporary: null,
    readOnlyFiles: [],
    writable: [],
    ...over,
  });
  const scope = (over: Partial<SandboxScope> = {}): SandboxScope => ({
    cwd: '/repo',
    env: {},
    git: null,
    provider: null,
    readOnlyFiles: [],
    tmp: null,
    workTree: '/repo',
    ...over,
  });

  it('builds the bubblewrap options in layers: read-only root, protected roots, writable, read-only again, emptied trees, own paths bound back', () => {
    const f = make();
    const hidden = path.join(f.runtime.paths.home, 'workspaces');
    const worktrees = path.join(f.base, 'worktrees');
    const own = path.join(worktrees, 'k', 'one');
    fs.mkdirSync(own, { recursive: true });
    fs.writeFileSync(path.join(own, '.git'), 'gitdir: x');
    const options = bubblewrapOptions(
      layout({
        concealed: [worktrees, path.join(f.base, 'missing')],
        cwd: own,
        hidden: [hidden],
        protectedRoots: [f.runtime.paths.root],
        readOnly: [path.join(own, '.git'), '/etc/hostname'],
        readOnlyFiles: [f.attachment, f.attachment, path.join(hidden, 'gone.txt'), '/etc/hostname'],
        writable: [own, own, path.join(f.base, 'missing')],
      }),
    );
    expect(options).toEqual([
      '--ro-bind', '/', '/',
      '--dev', '/dev',
      ...passedDevices().flatMap((device) => ['--dev-bind', device, device]),
      '--unshare-pid',
      '--proc', '/proc',
      '--cap-drop', 'CAP_SYS_ADMIN',
      '--cap-drop', 'CAP_DAC_READ_SEARCH',
      '--bind', '/tmp', '/tmp',
      '--bind', '/var/tmp', '/var/tmp',
      '--ro-bind', f.runtime.paths.root, f.runtime.paths.root,
      '--bind', own, own,
      '--ro-bind', path.join(own, '.git'), path.join(own, '.git'),
      '--ro-bind', '/etc/hostname', '/etc/hostname',
      '--tmpfs', hidden,
      '--tmpfs', worktrees,
      // what of the writable and read-only lies inside an emptied tree, once, existing paths only
      '--bind', own, own,
      '--ro-bind', path.join(own, '.git'), path.join(own, '.git'),
      '--ro-bind', f.attachment, f.attachment,
      '--chdir', own,
    ]); // prettier-ignore
  });

  it("gives a run a network namespace: none at all, or one whose only way out is its proxy's socket, bound back inside the concealed tree", () => {
    const f = make();
    const runs = path.join(f.base, 'tmp');
    const socketDir = path.join(runs, 'run_1.net');
    fs.mkdirSync(socketDir, { recursive: true });
    const socketPath = path.join(socketDir, 'proxy.sock');
    const proxied = bubblewrapOptions(
      layout({ concealed: [runs], network: { forwardPorts: [4310], kind: 'proxy', proxyPort: 3128, socketPath } }),
    );
    expect(proxied).toContain('--unshare-net');
    // After the tmpfs that conceals every run's directory: its own socket's folder comes back.
    expect(proxied.indexOf('--bind', proxied.indexOf(runs))).toBe(proxied.indexOf(socketDir) - 1);
    expect(bubblewrapOptions(layout({ network: { kind: 'none' } }))).toContain('--unshare-net');
    expect(bubblewrapOptions(layout({ network: { kind: 'host' } }))).not.toContain('--unshare-net');
    expect(bubblewrapOptions(layout({}))).not.toContain('--unshare-net');
  });

  it('binds the working directory back when it lies inside a hidden tree', () => {
    const f = make();
    const hidden = path.join(f.runtime.paths.home, 'workspaces');
    const cwd = f.runtime.paths.dataDirectory;
    expect(bubblewrapOptions(layout({ cwd, hidden: [hidden] }))).toEqual(
      expect.arrayContaining(['--tmpfs', hidden, '--bind', cwd, cwd, '--chdir', cwd]),
    );
    expect(bubblewrapOptions(layout({ cwd: '/h/workspaces-other', hidden: [hidden] }))).not.toContain(cwd);
  });

  it("lays out an agent's own repository: its work tree writable (its .git inside), the person's git directory read-only, other worktrees concealed", () => {
    const f = make();
    const sut = new AgentSandbox(f.runtime.configuration, f.runtime);
    const common = path.join(f.runtime.paths.root, '.git');
    const wt = path.join(f.runtime.paths.home, 'worktrees', 'k', 'one');
    const result = sut.layout(
      scope({
        cwd: wt,
        env: { HOME: '/home/u' },
        git: { kind: 'own', personCommonDir: common },
        provider: 'codex',
        tmp: '/t/run',
        workTree: wt,
      }),
    );
    expect(result.writable).toEqual(expect.arrayContaining([wt, '/t/run', '/home/u/.codex', '/home/u/.cache']));
    // Nothing of the person's repository: not its objects, refs or logs, not the repository itself.
    for (const shared of ['objects', 'refs', 'logs'].map((d) => path.join(common, d))) {
      expect(result.writable).not.toContain(shared);
    }
    expect(result.writable).not.toContain(common);
    expect(result.writable).not.toContain(f.runtime.paths.root);
    expect(result.protectedRoots).toEqual(expect.arrayContaining([f.runtime.paths.root, '/home/u', common]));
    expect(result.readOnly).toEqual(
      expect.arrayContaining([f.runtime.paths.launcherDirectory, '/home/u/.bashrc', '/home/u/.ssh']),
    );
    // Its CLI's folder is writable, but not the config.toml the manager reads hosts and a key name from (issue 45).
    expect(result.readOnly).toContain('/home/u/.codex/config.toml');
    expect(result.concealed).toEqual([
      path.join(f.runtime.paths.home, 'worktrees'),
      path.join(f.runtime.paths.home, 'tmp'),
    ]);
    // In place the repository's git directory is the agent's too; its configuration, hooks, HEAD,
    // commondir, worktrees and submodules' settings still not.
    fs.mkdirSync(path.join(common, 'modules', 'lib', 'hooks'), { recursive: true });
    fs.writeFileSync(path.join(common, 'modules', 'lib', 'HEAD'), 'ref: refs/heads/main\n');
    const inPlace = sut.layout(
      scope({
        cwd: f.runtime.paths.root,
        env: { HOME: '/home/u' },
        git: { commonDir: common, gitDir: common, kind: 'shared' },
        workTree: f.runtime.paths.root,
      }),
    );
    expect(inPlace.writable).toEqual(expect.arrayContaining([f.runtime.paths.root, common]));
    expect(inPlace.readOnly).toEqual(
      expect.arrayContaining(
        [
          'config',
          'hooks',
          'info',
          'worktrees',
          'commondir',
          'HEAD',
          'modules/lib/config',
          'modules/lib/hooks',
          'modules/lib/info',
        ].map((entry) => path.join(common, entry)),
      ),
    );
  });

  it('adds configured writable paths, ~ expanded', async () => {
    const f = make();
    await f.runtime.configuration.update({ agentWritablePaths: ['~/work', '/opt/shared'] });
    const sut = new AgentSandbox(f.runtime.configuration, f.runtime);
    const result = sut.layout(scope({ env: { HOME: '/home/u' } }));
    expect(result.writable).toEqual(expect.arrayContaining(['/home/u/work', '/opt/shared']));
    expect(expandHome('~', '/home/u')).toBe('/home/u');
    expect(expandHome('relative', '/home/u')).toBeNull();
  });

  it('writes the same rules as a Seatbelt profile for macOS', () => {
    const profile = seatbeltProfile(
      layout({
        concealed: ['/h/worktrees'],
        cwd: '/h/worktrees/k/one',
        hidden: ['/h/workspaces'],
        readOnly: ['/r/.git/hooks'],
        readOnlyFiles: ['/h/workspaces/k/att'],
        writable: ['/h/worktrees/k/one', '/r/.git/objects'],
      }),
    );
    expect(profile.split('\n')).toEqual([
      '(version 1)',
      '(allow default)',
      '(deny file-write*)',
      '(allow file-write* (subpath "/tmp") (subpath "/var/tmp") (subpath "/private/tmp") (subpath "/private/var/folders") (subpath "/dev") (subpath "/h/worktrees/k/one") (subpath "/r/.git/objects"))',
      '(deny file-write* (subpath "/r/.git/hooks"))',
      '(deny file-read* file-write* (subpath "/h/workspaces") (subpath "/h/worktrees"))',
      '(allow file-read* file-write* (subpath "/h/worktrees/k/one"))',
      '(allow file-read* (literal "/h/workspaces/k/att"))',
      '',
    ]);
  });

  it("gives a macOS run no way out but its proxy's loopback port and the ports it forwards (issue 45)", () => {
    const proxied = seatbeltProfile(
      layout({ network: { forwardPorts: [4310, 4310, 9000], kind: 'proxy', proxyPort: 51234, socketPath: null } }),
    ).split('\n');
    expect(proxied.slice(-5)).toEqual([
      '(deny network-outbound)',
      '(allow network-outbound (remote ip "localhost:51234"))',
      '(allow network-outbound (remote ip "localhost:4310"))',
      '(allow network-outbound (remote ip "localhost:9000"))',
      '',
    ]);
    expect(
      seatbeltProfile(layout({ network: { kind: 'none' } }))
        .split('\n')
        .slice(-2),
    ).toEqual(['(deny network-outbound)', '']);
    expect(seatbeltProfile(layout({ network: { kind: 'host' } }))).not.toContain('network');
  });

  it('with agentIsolation "off" runs commands unchanged and says why', async () => {
    const sut = await started(make('off'));
    expect(sut.status).toEqual({
      enabled: false,
      mechanism: null,
      reason: 'agentIsolation is "off" in the configuration',
    });
    expect(sut.wrap('/usr/bin/codex', ['exec'], scope())).toEqual({ args: ['exec'], command: '/usr/bin/codex' });
  });

  it('reports a bubblewrap that refuses (no user namespaces) with its own words, and leaves commands alone', async () => {
    const f = make();
    const bin = path.join(f.base, 'fake-bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(
      path.join(bin, 'bwrap'),
      '#!/bin/sh\necho "bwrap: No permissions to creating new namespace" >&2\nexit 1\n',
      { mode: 0o755 },
    );
    const sut = await withPath(bin, () => started(f));
    expect(sut.status).toEqual({
      enabled: false,
      mechanism: null,
      reason:
        'bubblewrap cannot create the sandbox here (bwrap: No permissions to creating new namespace); user namespaces may be disabled or restricted',
    });
    expect(sut.wrap('codex', [], scope())).toEqual({ args: [], command: 'codex' });
  });

  it('reports a bubblewrap that starts but does not hide the data directory', async () => {
    const f = make();
    const bin = path.join(f.base, 'fake-bin');
    fs.mkdirSync(bin);
    // Runs the command as is: the lock file stays visible.
    fs.writeFileSync(path.join(bin, 'bwrap'), '#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift; exec "$@"\n', {
      mode: 0o755,
    });
    const sut = await withPath(bin, () => started(f));
    expect(sut.status).toEqual({
      enabled: false,
      mechanism: null,
      reason: `bubblewrap started but did not hide ${f.runtime.paths.lockPath}`,
    });
  });

  (HAS_BWRAP ? it : it.skip)(
    'runs a process that cannot see the data directory but reads its attachment, in its cwd, and is killed as a tree',
    async () => {
      const f = make();
      const sut = await started(f);
      expect(sut.status).toEqual({ enabled: true, mechanism: 'bubblewrap', reason: null });
      const script = [
        'set -e',
        `test ! -e ${f.token}`,
        `test ! -e ${f.other}`,
        `test "$(cat ${f.attachment})" = mine`,
        `! sh -c 'echo x > ${f.attachment}' 2>/dev/null`,
        `test "$(pwd)" = ${f.runtime.paths.root}`,
        // Only the sandbox's own processes are in its /proc: no way into the manager's mounts.
        `test ! -e /proc/${process.pid}/root${f.token}`,
        'echo ready',
        'sleep 60 & sleep 60',
      ].join('\n');
      const wrapped = sut.wrap(
        '/bin/sh',
        ['-c', script],
        scope({ cwd: f.runtime.paths.root, readOnlyFiles: [f.attachment], workTree: f.runtime.paths.root }),
      );
      expect(wrapped.command).toBe('/usr/bin/bwrap');
      const lines: string[] = [];
      const marker = `sandbox-test-${process.pid}`;
      const run = await runProcess({
        ...wrapped,
        cwd: f.runtime.paths.root,
        env: { PATH: process.env.PATH ?? '' },
        inactivityTimeoutMs: 30_000,
        marker,
        onLine: (l) => lines.push(l),
        stdin: '',
      });
      const deadline = Date.now() + 20_000;
      while (!lines.includes('ready') && Date.now() < deadline) {
        if (await Promise.race([run.finished.then(() => true), new Promise((r) => setTimeout(() => r(false), 20))])) {
          break;
        }
      }
      expect(lines).toEqual(['ready']);
      const pids = findRunProcesses(marker, run.pid);
      expect(pids.length).toBeGreaterThanOrEqual(3); // bwrap, its init, sh, the sleeps
      await expect(run.interrupt()).resolves.toMatchObject({ reason: 'interrupted' });
      expect(pids.filter(isRunning)).toEqual([]);
    },
  );

  (HAS_BWRAP ? it : it.skip)(
    "keeps a real agent to its own repository: commits there, writes nothing of the person's repository, another worktree or shell rc",
    async () => {
      const f = make();
      const { execFileSync } = await import('node:child_process');
      const sh = (args: string[], cwd: string) => execFileSync('git', args, { cwd, stdio: 'pipe' }).toString().trim();
      const repo = f.runtime.paths.root;
      sh(['init', '-q', '-b', 'main'], repo);
      sh(['-c', 'user.name=a', '-c', 'user.email=a@example.com', 'commit', '-q', '--allow-empty', '-m', 'one'], repo);
      const worktrees = path.join(f.runtime.paths.home, 'worktrees', 'k');
      const mine = path.join(worktrees, 'mine');
      const theirs = path.join(worktrees, 'theirs');
      const one = sh(['rev-parse', 'HEAD'], repo);
      for (const [target, branch] of [
        [mine, 'agent/mine'],
        [theirs, 'agent/theirs'],
      ]) {
        await createAgentRepository({
          base: null,
          branch,
          env: {},
          personCommonDir: path.join(repo, '.git'),
          personTop: repo,
          snapshotIndex: null,
          start: one,
          target,
        });
      }
      const home = path.join(f.base, 'userhome');
      fs.mkdirSync(home);
      fs.writeFileSync(path.join(home, '.bashrc'), '# mine\n');
      fs.mkdirSync(f.runtime.paths.launcherDirectory, { recursive: true });
      fs.writeFileSync(path.join(f.runtime.paths.launcherDirectory, 'code-factory-cli'), '#!/bin/sh\n');
      const sut = await started(f);
      const tmp = sut.makeTemporary('run_mine');
      const otherTmp = sut.makeTemporary('run_other');
      fs.writeFileSync(path.join(otherTmp, 'secret'), 'x');
      const tries = {
        bashrc: path.join(home, '.bashrc'),
        checkout: path.join(repo, 'planted.txt'),
        hook: path.join(repo, '.git', 'hooks', 'post-checkout'),
        homeBin: path.join(home, '.local-bin-git'),
        launcher: path.join(f.runtime.paths.launcherDirectory, 'code-factory-cli'),
        personObjects: path.join(repo, '.git', 'objects', 'info', 'alternates'),
        personPackedRefs: path.join(repo, '.git', 'packed-refs'),
        personRef: path.join(repo, '.git', 'refs', 'heads', 'main'),
        repoConfig: path.join(repo, '.git', 'config'),
        theirs: path.join(theirs, 'planted.txt'),
      };
      const script = [
        ...Object.entries(tries).map(
          ([name, file]) => `(echo planted >> '${file}') 2>/dev/null && echo "wrote ${name}"`,
        ),
        `test -e '${theirs}' && echo "saw theirs"`,
        `test -e '${path.join(otherTmp, 'secret')}' && echo "saw other tmp"`,
        // Its /dev is its own: the person's terminals (the host's /dev/pts) are not there to read.
        `[ "$(stat -c %d /dev/pts/)" = "${fs.statSync('/dev/pts').dev}" ] && echo "saw host pts"`,
        `echo mine > "$TMPDIR/scratch" && echo "tmp ok"`,
        'echo work > work.txt && git add work.txt && git -c user.name=a -c user.email=a@example.com commit -qm work && echo "committed"',
        'true',
      ].join('\n');
      const env = { HOME: home, PATH: process.env.PATH ?? '', TMPDIR: tmp };
      const common = path.join(repo, '.git');
      const wrapped = sut.wrap(
        '/bin/sh',
        ['-c', script],
        scope({ cwd: mine, env, git: { kind: 'own', personCommonDir: common }, tmp, workTree: mine }),
      );
      const out = execFileSync(wrapped.command, wrapped.args, { cwd: mine, env }).toString();
      expect(out.trim().split('\n').sort()).toEqual(['committed', 'tmp ok']);
      expect(sh(['log', '-1', '--format=%s', 'agent/mine'], mine)).toBe('work');
      // The person's repository has nothing of it: the commit is the agent's until the manager imports it.
      expect(() => sh(['cat-file', '-e', sh(['rev-parse', 'agent/mine'], mine)], repo)).toThrow();
      expect(fs.readFileSync(tries.bashrc, 'utf8')).toBe('# mine\n');
      expect(fs.existsSync(tries.checkout) || fs.existsSync(tries.hook) || fs.existsSync(tries.theirs)).toBe(false);
      expect(fs.readFileSync(tries.launcher, 'utf8')).toBe('#!/bin/sh\n');
      // Without the sandbox the same script writes them all (the test could fail).
      const bare = execFileSync('/bin/sh', ['-c', script], { cwd: mine, env }).toString();
      expect(bare).toContain('wrote bashrc');
      expect(bare).toContain('wrote theirs');
    },
  );

  (HAS_BWRAP ? it : it.skip)(
    'gives a run its own sized /tmp, $TMPDIR and /dev/shm, caps its processes, and says which limit it hit (issue 44 §5)',
    async () => {
      const f = make();
      await f.runtime.configuration.update({ agentProcessLimit: 40, agentShmSizeMb: 16, agentTmpSizeMb: 32 });
      const sut = await started(f);
      const limits = new RunLimits(f.runtime.configuration, f.runtime);
      limits.onModuleInit();
      try {
        const tmp = sut.makeTemporary('run_limits');
        const caps = limits.open('run_limits');
        const outside = `am-limits-${process.pid}`;
        const script = [
          // Private: what it writes to /tmp is not the machine's, and $TMPDIR is that same /tmp.
          `echo x > /tmp/${outside} && echo x > /dev/shm/${outside}`,
          'test "$(readlink -f "$TMPDIR")" = /tmp && echo tmpdir-is-tmp',
          `df -k /tmp | tail -1 | awk '{print "tmp-kb=" $2}'`,
          `df -k /dev/shm | tail -1 | awk '{print "shm-kb=" $2}'`,
          // 3 GB into $TMPDIR stops at its size.
          'dd if=/dev/zero of="$TMPDIR/big" bs=1M count=3072 2>/dev/null; echo "dd=$?"',
          // A fork of 1,000 sleeps: refused past the cap.
          '(i=0; while [ $i -lt 1000 ]; do sleep 30 & i=$((i+1)); done) 2>/dev/null; echo forked',
          'sleep 30',
        ].join('\n');
        const env = { PATH: process.env.PATH ?? '', TMPDIR: tmp };
        const wrapped = sut.wrap(
          '/bin/sh',
          ['-c', script],
          scope({ caps, cwd: f.runtime.paths.root, env, tmp, workTree: f.runtime.paths.root }),
        );
        const lines: string[] = [];
        const marker = `limits-test-${process.pid}`;
        const run = await runProcess({
          ...wrapped,
          cwd: f.runtime.paths.root,
          env,
          inactivityTimeoutMs: 60_000,
          marker,
          onLine: (l) => lines.push(l),
          stdin: '',
        });
        let reasons: string[] = [];
        const watch = limits.watch(caps, run.pid ?? -1, (reason) => (reasons = [...reasons, reason]));
        const deadline = Date.now() + 30_000;
        while (!lines.includes('forked') && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(lines).toEqual(expect.arrayContaining(['tmpdir-is-tmp', 'tmp-kb=32768', 'shm-kb=16384', 'forked']));
        expect(lines.find((l) => l.startsWith('dd='))).not.toBe('dd=0');
        expect(fs.existsSync(`/tmp/${outside}`) || fs.existsSync(`/dev/shm/${outside}`)).toBe(false);
        // The watch names the first limit it saw the run hit. The script fills /tmp before it forks,
        // so where this machine has a cgroup either may come first: it depends on when the watch's
        // timer fires (a loaded machine saw the full /tmp first). The cap itself is checked below.
        expect(watch.check()).toBe(true);
        expect(reasons[0]).toMatch(
          limits.mechanism.kind === 'cgroup'
            ? /more than 40 processes at once \(agentProcessLimit\)|filled its temporary space .*32 MB/
            : /filled its temporary space .*32 MB/,
        );
        if (limits.mechanism.kind === 'cgroup') {
          // With both limits hit, a watch names the process cap (it checks the cap first).
          let first = '';
          const again = limits.watch(caps, run.pid ?? -1, (reason) => (first ||= reason));
          expect(again.check()).toBe(true);
          again.stop();
          expect(first).toMatch(/more than 40 processes at once \(agentProcessLimit\)/);
          expect(limits.processLimitHit(caps)).toMatch(/more than 40 processes/);
          expect(temporaryFull(run.pid ?? -1, caps)).toMatch(
            /filled its temporary space \(\/tmp, \/var\/tmp and \$TMPDIR: 32 MB, agentTmpSizeMb\)/,
          );
        }
        watch.stop();
        await run.interrupt();
        await limits.close(caps);
        if (caps.cgroupProcs !== null) {
          expect(fs.existsSync(path.dirname(caps.cgroupProcs))).toBe(false);
        }
      } finally {
        limits.onApplicationShutdown();
      }
    },
    60_000,
  );
});
