import * as fs from 'node:fs';
import * as path from 'node:path';

import { Subject } from 'rxjs';

import { ConfigurationValues } from '@libs/contracts';

import { invalid } from '../errors/domain-error';
import { writeAtomically } from './atomic-file';
import { envName } from './configuration-env';
import {
  CONFIGURATION_DEFAULTS,
  CONFIGURATION_KEYS,
  ConfigurationKey,
  LIVE_CONFIGURATION_KEYS,
  NULLABLE_NUMBER_KEYS,
  checkConfiguration,
} from './configuration.schema';

export interface ConfigurationSnapshot {
  /** The configuration file. */
  path: string;
  /** What the file says (defaults filled in): what the next start uses, before overrides. */
  values: ConfigurationValues;
  /** What this process runs with: values plus launch flags and CODE_FACTORY_* variables. */
  effective: ConfigurationValues;
  /** Fields set for this process by a flag or environment variable (never written back). */
  overriddenFields: ConfigurationKey[];
  restartRequired: boolean;
  /** Fields changed since start that only take effect after a restart. */
  restartRequiredFields: ConfigurationKey[];
}

export class ConfigurationFileError extends Error {}

/** JSON text, or the text itself when it is not JSON (the check then says what is wrong with it). */
function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

/** Reads the CODE_FACTORY_* overrides; numbers are parsed, empty strings ignored. */
export function overridesFromEnv(env: NodeJS.ProcessEnv): Partial<ConfigurationValues> {
  const result: Record<string, unknown> = {};
  for (const key of CONFIGURATION_KEYS) {
    const raw = env[envName(key)];
    if (raw === undefined || raw === '') {
      continue;
    }
    const fallback = CONFIGURATION_DEFAULTS[key];
    if (key === 'secrets' || key === 'notificationChannels') {
      // Objects: JSON (CODE_FACTORY_SECRETS='[{"name":"NPM_TOKEN","host":"npm.pkg.github.com","header":"Authorization"}]').
      result[key] = parseJson(raw);
      continue;
    }
    // A list is written comma-separated in the environment (CODE_FACTORY_WORKTREE_LINKS=node_modules,.venv).
    const numeric = typeof fallback === 'number' || NULLABLE_NUMBER_KEYS.includes(key);
    result[key] = Array.isArray(fallback)
      ? raw.split(',').filter((item) => item !== '')
      : numeric && /^-?\d+(\.\d+)?$/.test(raw)
        ? Number(raw)
        : raw;
  }
  return result;
}

/**
 * The workspace configuration: the JSON file (created with defaults on first start), overridden
 * for this process by launch flags and the environment. PATCHes are validated, written
 * atomically (temp file + rename) and applied at once where the field is live.
 */
export class ConfigurationService {
  private persisted: ConfigurationValues;
  private readonly bootPersisted: ConfigurationValues;
  private effectiveValues: ConfigurationValues;
  private readonly overrides: Partial<ConfigurationValues>;
  private readonly changesSubject = new Subject<ConfigurationSnapshot>();
  /** Emits after each successful update, for live-applied fields (log level, intervals). */
  readonly changes$ = this.changesSubject.asObservable();

  constructor(
    readonly filePath: string,
    overrides: Partial<ConfigurationValues>,
  ) {
    const overrideErrors = checkConfiguration(overrides);
    if (overrideErrors.length > 0) {
      throw new ConfigurationFileError(`invalid launch option: ${overrideErrors.join('; ')}`);
    }
    this.overrides = overrides;
    this.persisted = this.load();
    this.bootPersisted = { ...this.persisted };
    this.effectiveValues = { ...this.persisted, ...overrides };
  }

  /** The value this process runs with. */
  get<K extends ConfigurationKey>(key: K): ConfigurationValues[K] {
    return this.effectiveValues[key];
  }

  snapshot(): ConfigurationSnapshot {
    const restartRequiredFields = CONFIGURATION_KEYS.filter(
      (key) => !LIVE_CONFIGURATION_KEYS.includes(key) && this.persisted[key] !== this.bootPersisted[key],
    );
    return {
      effective: { ...this.effectiveValues },
      overriddenFields: CONFIGURATION_KEYS.filter((key) => key in this.overrides),
      path: this.filePath,
      restartRequired: restartRequiredFields.length > 0,
      restartRequiredFields,
      values: { ...this.persisted },
    };
  }

  /** Validates, persists and applies a partial update. Unknown fields and bad values throw `invalid`. */
  update(input: Partial<ConfigurationValues>): Promise<ConfigurationSnapshot> {
    // Absent fields are left alone (a DTO instance may carry them as undefined).
    const patch = Object.fromEntries(
      Object.entries(input).filter(([, v]) => v !== undefined),
    ) as Partial<ConfigurationValues>;
    const errors = checkConfiguration(patch);
    if (errors.length > 0) {
      return Promise.reject(invalid('invalid_configuration', errors.join('; ')));
    }
    // Read-modify-write with no await in between: two PATCHes cannot interleave.
    const next = { ...this.persisted, ...patch };
    writeAtomically(this.filePath, serialize(next));
    this.persisted = next;
    for (const key of LIVE_CONFIGURATION_KEYS) {
      if (key in patch) {
        (this.effectiveValues as unknown as Record<string, unknown>)[key] = next[key];
      }
    }
    const snapshot = this.snapshot();
    this.changesSubject.next(snapshot);
    return Promise.resolve(snapshot);
  }

  private load(): ConfigurationValues {
    const values = readConfigurationFile(this.filePath);
    if (values !== null) {
      return values;
    }
    // First start: write the defaults so the user can see and edit every field.
    fs.mkdirSync(path.dirname(this.filePath), { recursive: true });
    writeAtomically(this.filePath, serialize(CONFIGURATION_DEFAULTS));
    return { ...CONFIGURATION_DEFAULTS };
  }
}

/**
 * What a configuration file says, defaults filled in; null when there is no file. Creates
 * nothing, for commands that only read (`agent-manager token` before any start).
 */
export function readConfigurationFile(filePath: string): ConfigurationValues | null {
  let text: string;
  try {
    text = fs.readFileSync(filePath, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      return null;
    }
    throw new ConfigurationFileError(`cannot read ${filePath}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigurationFileError(`${filePath} is not valid JSON: ${(err as Error).message}`);
  }
  const errors = checkConfiguration(parsed);
  if (errors.length > 0) {
    throw new ConfigurationFileError(`${filePath}: ${errors.join('; ')}`);
  }
  return { ...CONFIGURATION_DEFAULTS, ...(parsed as Partial<ConfigurationValues>) };
}

function serialize(values: ConfigurationValues): string {
  const ordered = Object.fromEntries(CONFIGURATION_KEYS.map((key) => [key, values[key]]));
  return `${JSON.stringify(ordered, null, 2)}\n`;
}
