import { createHash } from 'node:crypto';
import * as os from 'node:os';

import { LIMITS } from '@libs/contracts';
import type { EventActor, Person } from '@libs/contracts';

import type { ConfigurationService } from './configuration/configuration.service';
import { git } from './git/git';

/**
 * C0 and C1 controls, and the bidirectional overrides and isolates that make text read
 * differently than it is stored: none of them belongs in a name shown on a board.
 */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/**
 * A name or email as one bounded line of plain text: controls dropped, runs of spaces made one,
 * cut to `max` characters (whole code points). Whatever read it — git's configuration, the OS —
 * it is text someone else may have written, shown to every person on the board.
 */
export function personText(raw: string, max: number): string {
  const line = raw.replace(UNPRINTABLE, ' ').replace(/\s+/g, ' ').trim();
  return Array.from(line).slice(0, max).join('').trim();
}

/** The stable id of a person: the same on every manager they run, whichever name they show. */
export function personId(name: string, email: string | null): string {
  const basis = email !== null ? `email:${email.toLowerCase()}` : `name:${name}`;
  return `person_${createHash('sha256').update(basis).digest('hex').slice(0, 24)}`;
}

/** The actor a person's requests carry on every event they cause. */
export function personActor(person: Person): EventActor {
  return { email: person.email, id: person.id, kind: 'human', name: person.name };
}

function cleanEmail(raw: string | null): string | null {
  if (raw === null) {
    return null;
  }
  const text = personText(raw, LIMITS.personEmailLength);
  return EMAIL.test(text) ? text : null;
}

/**
 * One git configuration value from the scopes the person owns (global, then system). The
 * repository's own configuration is never asked: an agent can write it (.git/config is shared by
 * every worktree) and would then act, on every event, as whoever it named.
 */
async function gitIdentity(key: 'user.name' | 'user.email', cwd: string): Promise<string | null> {
  for (const scope of ['--global', '--system']) {
    try {
      const result = await git(['config', scope, '--includes', '--get', key], {
        allowTruncated: true,
        cwd,
        maxBytes: 4096,
        okCodes: [0, 1],
        timeoutMs: 10_000,
      });
      // A value past maxBytes is cut and git killed, whether or not it had already exited 0: its
      // first bytes are the value's start (bounded further below), as good as a whole one.
      if ((result.code === 0 || result.truncated) && result.stdout.trim() !== '') {
        return result.stdout;
      }
    } catch {
      // git missing, or its configuration unreadable: the next source decides.
    }
  }
  return null;
}

function osUserName(env: NodeJS.ProcessEnv): string {
  try {
    return os.userInfo().username;
  } catch {
    // No passwd entry for this uid (a container's arbitrary user): what the shell says, if anything.
    return env.USER ?? env.LOGNAME ?? '';
  }
}

/**
 * Who this manager acts for, resolved once at start: the configured `personName`/`personEmail`,
 * else git's global (or system) `user.name`/`user.email`, else the OS account's name. Every
 * source's text is bounded and stripped of control characters.
 */
export async function resolvePerson(
  configuration: ConfigurationService,
  workspaceRoot: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Person> {
  const configuredName = configuration.get('personName');
  const configuredEmail = configuration.get('personEmail');
  const fromConfiguration = configuredName === null ? '' : personText(configuredName, LIMITS.personNameLength);
  const gitName =
    fromConfiguration === ''
      ? personText((await gitIdentity('user.name', workspaceRoot)) ?? '', LIMITS.personNameLength)
      : '';
  const email =
    configuredEmail !== null ? cleanEmail(configuredEmail) : cleanEmail(await gitIdentity('user.email', workspaceRoot));
  let name = fromConfiguration;
  let source: Person['source'] = 'configuration';
  if (name === '') {
    [name, source] = [gitName, 'git'];
  }
  if (name === '') {
    [name, source] = [personText(osUserName(env), LIMITS.personNameLength) || 'unknown', 'os'];
  }
  return { email, id: personId(name, email), name, source };
}
