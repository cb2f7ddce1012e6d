import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';

import { AGENT_ISOLATION_MODES, AUTHENTICATION_MODES, ConfigurationValues, LOG_LEVELS } from '@libs/contracts';

import { OptionalEnum, OptionalInt, OptionalText } from '../validation';

export const CONFIGURATION_DEFAULTS: ConfigurationValues = {
  agentIsolation: 'auto',
  allowedOrigin: null,
  authentication: 'token',
  cancelledRequirementRetentionDays: 7,
  claudeExecutable: 'claude',
  codexExecutable: 'codex',
  databasePath: null,
  doneRequirementRetentionDays: 365,
  githubApiUrl: 'https://api.github.com',
  githubWebhookSecret: null,
  host: '127.0.0.1',
  logFilePath: null,
  logLevel: 'info',
  logMaxFiles: '14d',
  logMaxSize: '20m',
  port: 4310,
  pullRequestReconcileIntervalSeconds: 60,
  rdInactivityTimeoutSeconds: 3600,
};

export type ConfigurationKey = keyof ConfigurationValues;
export const CONFIGURATION_KEYS = Object.keys(CONFIGURATION_DEFAULTS) as ConfigurationKey[];

/** Fields a running manager applies at once; every other field takes effect on restart. */
export const LIVE_CONFIGURATION_KEYS: readonly ConfigurationKey[] = [
  'cancelledRequirementRetentionDays',
  'claudeExecutable',
  'codexExecutable',
  'doneRequirementRetentionDays',
  'githubWebhookSecret',
  'logLevel',
  'pullRequestReconcileIntervalSeconds',
  'rdInactivityTimeoutSeconds',
];

const ORIGIN = /^https?:\/\/[A-Za-z0-9.\-[\]:]+$/;
const SIZE = /^[1-9]\d{0,9}[kmg]?$/;
const FILES = /^[1-9]\d{0,5}d?$/;

/**
 * Every configuration field, all optional: the PATCH body, and the shape a config file or the
 * launch overrides are checked against before anything uses them.
 */
export class UpdateConfigurationDto implements Partial<ConfigurationValues> {
  @OptionalEnum(
    AGENT_ISOLATION_MODES,
    "auto: agents run in a sandbox hiding the workspaces' data (bubblewrap) where the machine allows it (default); off: never (restart required)",
  )
  agentIsolation?: ConfigurationValues['agentIsolation'];

  /** Origin (scheme://host[:port]) allowed to call the API from a browser besides the dashboard itself. */
  @OptionalText({ description: 'Extra browser origin allowed to call the API (CORS/CSRF), or null', example: 'http://localhost:4200', max: 200, nullable: true, pattern: ORIGIN })
  allowedOrigin?: string | null;

  @OptionalEnum(AUTHENTICATION_MODES, 'token: every API call needs the local token (default); none: no authentication at all (restart required)')
  authentication?: ConfigurationValues['authentication'];

  @OptionalInt({ description: 'Days a cancelled Requirement is kept before it is purged', max: 36_500, min: 0 })
  cancelledRequirementRetentionDays?: number;

  @OptionalText({ description: 'The Claude Code executable (a name on PATH or an absolute path)', example: 'claude', max: 4096, min: 1 })
  claudeExecutable?: string;

  @OptionalText({ description: 'The Codex CLI executable (a name on PATH or an absolute path)', example: 'codex', max: 4096, min: 1 })
  codexExecutable?: string;

  @OptionalText({ description: 'SQLite database file, or null for factory.sqlite in the data directory', max: 4096, min: 1, nullable: true })
  databasePath?: string | null;

  @OptionalInt({ description: 'Days a done Requirement is kept before it is purged', max: 36_500, min: 0 })
  doneRequirementRetentionDays?: number;

  @OptionalText({
    description: 'GitHub API root (restart required): https://api.github.com or https://<host>/api/v3 for GitHub Enterprise',
    example: 'https://api.github.com',
    max: 500,
    min: 8,
    pattern: /^https?:\/\/[^\s/]+(\/\S*)?$/,
  })
  githubApiUrl?: string;

  @OptionalText({
    description: 'Secret of the GitHub webhook (POST /api/github/webhook); null turns the webhook off. Write-only: read back as null',
    max: 1024,
    min: 8,
    nullable: true,
  })
  githubWebhookSecret?: string | null;

  @OptionalText({ description: 'Interface to listen on (restart required)', example: '127.0.0.1', max: 255, min: 1, pattern: /^[A-Za-z0-9.\-:[\]]+$/ })
  host?: string;

  @OptionalText({ description: 'Log file, or null for logs/agent-manager.log in the data directory', max: 4096, min: 1, nullable: true })
  logFilePath?: string | null;

  @OptionalEnum(LOG_LEVELS, 'Log level (applied at once)')
  logLevel?: ConfigurationValues['logLevel'];

  @OptionalText({ description: 'Files (e.g. 10) or days (e.g. 14d) of logs to keep', example: '14d', max: 7, min: 1, pattern: FILES })
  logMaxFiles?: string;

  @OptionalText({ description: 'Size at which the log rotates (bytes, or with k/m/g)', example: '20m', max: 11, min: 1, pattern: SIZE })
  logMaxSize?: string;

  @OptionalInt({ description: 'TCP port (restart required); 0 picks a free port', max: 65_535, min: 0 })
  port?: number;

  @OptionalInt({ description: 'Seconds between pull request reconciliations; 0 disables polling', max: 2_147_483, min: 0 })
  pullRequestReconcileIntervalSeconds?: number;

  @OptionalInt({ description: 'An RD run that prints nothing for this many seconds is ended as timed out', max: 604_800, min: 1 })
  rdInactivityTimeoutSeconds?: number;
}

/** Checks a partial configuration; returns the error messages (empty when valid). */
export function checkConfiguration(values: unknown): string[] {
  if (typeof values !== 'object' || values === null || Array.isArray(values)) {
    return ['configuration must be a JSON object'];
  }
  const unknown = Object.keys(values).filter((key) => !CONFIGURATION_KEYS.includes(key as ConfigurationKey));
  const errors = unknown.map((key) => `property ${key} should not exist`);
  const dto = plainToInstance(UpdateConfigurationDto, values);
  for (const error of validateSync(dto)) {
    errors.push(...Object.values(error.constraints ?? {}));
  }
  return errors;
}
