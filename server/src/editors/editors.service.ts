import { spawn } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { Inject, Injectable, Logger } from '@nestjs/common';

import type { Editor, EditorApp } from '@libs/contracts';

import { ConfigurationService } from '../core/configuration/configuration.service';
import { conflict, forbidden, unavailable } from '../core/errors/domain-error';
import { REPOSITORY_VARIABLES } from '../core/git/git';
import { isLoopbackHost } from '../core/http/serving';
import { RUNTIME, Runtime } from '../core/runtime';
import { scrubbedEnvironment } from '../core/scrubbed-environment';
import { RequirementsService } from '../requirements/requirements.service';
import { EDITOR_APPS } from './editor-apps';
import { programsConfigured } from './untrusted-configuration';

/** PATH is read again after this long: an editor installed meanwhile shows up without a restart. */
const FOUND_TTL_MS = 60_000;
const MAC_APPLICATIONS = ['/Applications', path.join(process.env.HOME ?? '/', 'Applications')];

/** Who asks to open: the person at this machine, or someone elsewhere (a paired device, a remote socket). */
export interface OpenRequester {
  device: boolean;
  remoteAddress: string | undefined;
}

/**
 * Opens a Requirement's working copy in the person's editor (issue 48 §5). The editor runs as
 * the person, outside any sandbox, on a folder the agent wrote: what in it would make the editor
 * (or its git) run a program — hooks, git's program settings, tasks, editor settings — is named
 * first and opened only when the person confirms. The editor gets none of the manager's own
 * variables (the agents' scrubbed environment) and starts from the person's home, so nothing in
 * the folder is found as a command. Only a request from this machine may: from a phone it would
 * open a window nobody sees.
 */
@Injectable()
export class EditorsService {
  private readonly logger = new Logger('Editors');
  private found: { at: number; editors: Promise<Array<Editor & { argv: string[] }>> } | null = null;

  constructor(
    private readonly requirements: RequirementsService,
    private readonly configuration: ConfigurationService,
    @Inject(RUNTIME) private readonly runtime: Runtime,
  ) {}

  /** The apps found here, in the table's order (none for a requester elsewhere). */
  async available(requester: OpenRequester): Promise<{ items: Editor[]; local: boolean }> {
    const local = isLocal(requester);
    const editors = local ? await this.scan() : [];
    return { items: editors.map(({ app, command, label }) => ({ app, command, label })), local };
  }

  async open(requirementId: string, app: EditorApp, requester: OpenRequester, confirmed: boolean): Promise<Editor> {
    if (!isLocal(requester)) {
      throw conflict(
        'not_local',
        'an editor opens on the machine the manager runs on: ask from a browser on that machine (not a paired device or a remote one)',
      );
    }
    if (this.configuration.get('authentication') === 'none') {
      // Then any local process (an agent's forwarded port among them) could ask for it.
      throw forbidden('authentication_off', 'opening an editor needs authentication on (authentication: token)');
    }
    const requirement = await this.requirements.get(requirementId);
    const own = this.runtime.board?.runnerId ?? null;
    if (own !== null && requirement.runner !== null && requirement.runner.id !== own) {
      throw conflict(
        'runs_on_other_runner',
        `Requirement ${requirementId} works on another runner's machine; open it there`,
      );
    }
    const folder = requirement.worktree?.path ?? null;
    if (
      folder === null ||
      !(await fs.stat(folder).then(
        (s) => s.isDirectory(),
        () => false,
      ))
    ) {
      throw conflict('no_worktree', `Requirement ${requirementId} has no working copy now (its next run makes one)`);
    }
    const editor = (await this.scan()).find((e) => e.app === app);
    if (!editor) {
      throw conflict('editor_not_found', `${app} is not installed here (none of its commands is on PATH)`);
    }
    const programs = await programsConfigured(folder);
    if (programs.length > 0 && !confirmed) {
      throw conflict(
        'worktree_untrusted',
        `the agent's working copy holds settings an editor or its git may run as you: ${programs.join(', ')}. Open it anyway only if you trust them (confirm: true)`,
        programs,
      );
    }
    await launch(editor.argv, folder);
    this.logger.log({ app, msg: 'opened in editor', requirementId });
    return { app: editor.app, command: editor.command, label: editor.label };
  }

  private scan(): Promise<Array<Editor & { argv: string[] }>> {
    if (this.found === null || Date.now() - this.found.at > FOUND_TTL_MS) {
      this.found = { at: Date.now(), editors: findEditors() };
    }
    return this.found.editors;
  }
}

function isLocal(requester: OpenRequester): boolean {
  return !requester.device && isLoopbackHost((requester.remoteAddress ?? '').replace(/^::ffff:/, ''));
}

async function findEditors(): Promise<Array<Editor & { argv: string[] }>> {
  const darwin = process.platform === 'darwin';
  const found: Array<Editor & { argv: string[] }> = [];
  for (const entry of EDITOR_APPS) {
    let argv: string[] | null = null;
    for (const command of darwin ? entry.darwin : entry.linux) {
      const at = await onPath(command);
      if (at) {
        argv = [at];
        break;
      }
    }
    if (!argv && darwin && entry.bundle && (await bundleInstalled(entry.bundle))) {
      argv = ['/usr/bin/open', '-a', entry.bundle];
    }
    if (argv) {
      found.push({ app: entry.app, argv, command: argv.join(' '), label: entry.label });
    }
  }
  return found;
}

async function onPath(command: string): Promise<string | null> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    // A relative entry (`node_modules/.bin`, `.`) would be looked up wherever a command runs.
    if (!path.isAbsolute(dir)) {
      continue;
    }
    const candidate = path.join(dir, command);
    try {
      await fs.access(candidate, fs.constants.X_OK);
      if ((await fs.stat(candidate)).isFile()) {
        return candidate;
      }
    } catch {
      // not here
    }
  }
  return null;
}

async function bundleInstalled(bundle: string): Promise<boolean> {
  for (const dir of MAC_APPLICATIONS) {
    if (
      await fs.stat(path.join(dir, `${bundle}.app`)).then(
        () => true,
        () => false,
      )
    ) {
      return true;
    }
  }
  return false;
}

/** The person's environment as agents get it (none of the manager's own variables), with no repository forced on git. */
function editorEnvironment(): Record<string, string> {
  const env = scrubbedEnvironment();
  for (const name of REPOSITORY_VARIABLES) {
    delete env[name];
  }
  return env;
}

/**
 * Starts the editor detached, on its own (its life is not the manager's: a restart leaves the
 * window open), and resolves once it started; a command that cannot start is a 503 saying why.
 */
function launch(argv: string[], folder: string): Promise<void> {
  const [command, ...args] = argv;
  return new Promise((resolve, reject) => {
    const child = spawn(command ?? '', [...args, folder], {
      cwd: os.homedir(),
      detached: true,
      env: editorEnvironment(),
      stdio: 'ignore',
    });
    child.once('error', (err) => reject(unavailable('editor_failed', `${command} could not start: ${err.message}`)));
    child.once('spawn', () => {
      child.unref();
      resolve();
    });
  });
}
