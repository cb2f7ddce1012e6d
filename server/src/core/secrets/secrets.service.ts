import * as fs from 'node:fs';

import { Injectable } from '@nestjs/common';

import { ConfigurationService } from '../configuration/configuration.service';
import { type SecretSpec, parseSecretDefinitions } from './secret-definitions';

/** A file holding a secret is read up to this size (a token, a key: not a bundle). */
const SECRET_FILE_MAX = 64 * 1024;
/** Values are read again after this long (a rotated token applies within it), or at once on a configuration change. */
const VALUES_TTL_MS = 5000;
/** What an HTTP header's value may hold (RFC 9110 field-vchar, space and tab): never a line break. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Shorter values are not masked: a two-letter secret would blank every word it is part of. */
const MASK_MIN_LENGTH = 4;

/** One secret as `doctor` and the settings show it: whether its value could be read, never the value. */
export interface SecretState {
  name: string;
  source: string;
  available: boolean;
  problem: string | null;
  /** `host` of the header injection, or null. */
  host: string | null;
}

/** A header the run's proxy adds to one host's requests. */
export interface SecretInjection {
  name: string;
  /** The host as the person wrote it (what the allow-list gets). */
  rule: string;
  host: string;
  /** null: any port. */
  port: number | null;
  header: string;
  value: string;
}

interface Loaded {
  specs: SecretSpec[];
  values: Map<string, string>;
  problems: Map<string, string>;
  at: number;
  /** The values to mask, longest first (so one that contains another is masked whole). */
  masks: { name: string; value: string }[];
}

/**
 * The configured secrets (issue 45): values agents never see. They are read from the manager's
 * environment or a file only its owner may read, handed to the worktree's setup and teardown
 * commands and to the run's proxy (a header for one host), and masked wherever they would
 * otherwise be stored: a trace, a message, a run's error, a saved patch.
 */
@Injectable()
export class SecretsService {
  private loaded: Loaded | null = null;
  private loadedFor: unknown = null;

  constructor(private readonly configuration: ConfigurationService) {}

  /** `text` with every configured value replaced by `[secret NAME]`. */
  mask(text: string): string {
    let out = text;
    for (const { name, value } of this.current().masks) {
      if (out.includes(value)) {
        out = out.split(value).join(`[secret ${name}]`);
      }
    }
    return out;
  }

  maskNullable(text: string | null): string | null {
    return text === null ? null : this.mask(text);
  }

  /** Whether any secret is configured with a value (masking has work to do). */
  any(): boolean {
    return this.current().masks.length > 0;
  }

  /** The variables a worktree command the person trusts gets: each secret by its name. */
  environment(): Record<string, string> {
    return Object.fromEntries(this.current().values);
  }

  /** The variables a preview gets: the secrets the person marked `preview`. */
  previewEnvironment(): Record<string, string> {
    const loaded = this.current();
    return Object.fromEntries(
      loaded.specs.flatMap((spec) => {
        const value = loaded.values.get(spec.name);
        return spec.preview && value !== undefined ? [[spec.name, value]] : [];
      }),
    );
  }

  /** The headers the run's proxy adds, one per secret with a host and a value. */
  injections(): SecretInjection[] {
    const loaded = this.current();
    return loaded.specs.flatMap((spec) => {
      const value = loaded.values.get(spec.name);
      if (!spec.injection || value === undefined || !HEADER_VALUE.test(value)) {
        return [];
      }
      return [
        {
          header: spec.injection.header,
          host: spec.injection.host.host,
          name: spec.name,
          port: spec.injection.host.port,
          rule: spec.injection.host.text,
          value: spec.injection.format.split('{value}').join(value),
        },
      ];
    });
  }

  private current(): Loaded {
    const definitions = this.configuration.get('secrets');
    const now = Date.now();
    if (this.loaded === null || this.loadedFor !== definitions || now - this.loaded.at > VALUES_TTL_MS) {
      this.loaded = load(parseSecretDefinitions(definitions).specs, now);
      this.loadedFor = definitions;
    }
    return this.loaded;
  }
}

/** Each configured secret, whether its value can be read now, and why not (for `doctor`). */
export function secretStates(definitions: unknown): SecretState[] {
  const loaded = load(parseSecretDefinitions(definitions).specs, Date.now());
  return loaded.specs.map((spec) => ({
    available: loaded.values.has(spec.name) && !loaded.problems.has(spec.name),
    host: spec.injection?.host.text ?? null,
    name: spec.name,
    problem: loaded.problems.get(spec.name) ?? null,
    source: spec.file ?? `$${spec.name}`,
  }));
}

function load(specs: SecretSpec[], at: number): Loaded {
  const values = new Map<string, string>();
  const problems = new Map<string, string>();
  for (const spec of specs) {
    const read = spec.file === null ? fromEnvironment(spec.name) : fromFile(spec.file);
    if ('value' in read) {
      values.set(spec.name, read.value);
      if (spec.injection && !HEADER_VALUE.test(read.value)) {
        problems.set(
          spec.name,
          `${spec.name} holds a character a header cannot carry (a line break?): no header is added`,
        );
      }
    } else {
      problems.set(spec.name, read.problem);
    }
  }
  const masks = [...values]
    .filter(([, value]) => value.length >= MASK_MIN_LENGTH)
    .map(([name, value]) => ({ name, value }))
    .sort((a, b) => b.value.length - a.value.length);
  return { at, masks, problems, specs, values };
}

function fromEnvironment(name: string): { value: string } | { problem: string } {
  const value = process.env[name];
  return value === undefined || value === '' ? { problem: `the manager's environment has no ${name}` } : { value };
}

/**
 * A file's value, only when no one but its owner (this process's user) could have read or
 * changed it: a secret other accounts can read is no secret, and one they can write is theirs.
 */
function fromFile(file: string): { value: string } | { problem: string } {
  let fd: number;
  try {
    // Not followed through a link; a FIFO must not hold the manager up waiting for a writer.
    fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0));
  } catch (err) {
    return { problem: `${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` };
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) {
      return { problem: `${file} is not a file` };
    }
    if ((stat.mode & 0o077) !== 0) {
      return {
        problem: `${file} may be read or written by others (mode ${(stat.mode & 0o777).toString(8)}): chmod 600 it`,
      };
    }
    if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) {
      return { problem: `${file} belongs to another user` };
    }
    if (stat.size > SECRET_FILE_MAX) {
      return { problem: `${file} is larger than ${SECRET_FILE_MAX / 1024} KiB` };
    }
    const value = fs.readFileSync(fd, 'utf8').replace(/\r?\n$/, '');
    return value === '' ? { problem: `${file} is empty` } : { value };
  } finally {
    fs.closeSync(fd);
  }
}
