import { plainToInstance } from 'class-transformer';
import { ValidateBy, validateSync } from 'class-validator';

import {
  AGENT_ISOLATION_MODES,
  INTAKE_START_MODES,
  PROVIDERS,
  INTAKE_WRITE_BACK_MODES,
  AUTHENTICATION_MODES,
  ConfigurationValues,
  DATABASE_TLS_MODES,
  ISOLATION_MODES,
  LIMITS,
  LOG_LEVELS,
  MODEL_NAME_PATTERN,
  NETWORK_MODES,
} from '@libs/contracts';

import { VARIABLE_PATTERN } from '../environment-variables';
import { HostRuleList } from '../network/host-rule-list';
import { SecretList } from '../secrets/secret-definitions';
import { NotificationChannelList } from './notification-channels';
import { OptionalEnum, OptionalInt, OptionalNumber, OptionalText, OptionalTextList } from '../validation';

/** A text that compiles as a JavaScript regular expression (null and absent pass: other rules decide those). */
function IsRegularExpression() {
  return ValidateBy({
    name: 'isRegularExpression',
    validator: {
      defaultMessage: (args) => `${args?.property ?? 'value'} must be a valid regular expression`,
      validate: (value: unknown) => {
        if (typeof value !== 'string') {
          return true;
        }
        try {
          new RegExp(value);
          return true;
        } catch {
          return false;
        }
      },
    },
  });
}

export const CONFIGURATION_DEFAULTS: ConfigurationValues = {
  agentEnvironmentPass: [],
  agentIsolation: 'auto',
  agentProcessLimit: 2048,
  agentShmSizeMb: 256,
  agentTmpSizeMb: 2048,
  agentWritablePaths: [],
  allowedOrigin: null,
  authentication: 'token',
  board: null,
  cancelledRequirementRetentionDays: 7,
  claudeExecutable: 'claude',
  codexExecutable: 'codex',
  databasePath: null,
  databasePoolSize: 10,
  databaseStatementTimeoutSeconds: 60,
  databaseTls: 'url',
  databaseUrl: null,
  defaultBudgetMaxCostUsd: null,
  defaultBudgetMaxTokens: null,
  doneRequirementRetentionDays: 365,
  extraClaudeModels: [],
  extraCodexModels: [],
  githubApiUrl: 'https://api.github.com',
  githubWebhookSecret: null,
  gitlabApiUrl: 'https://gitlab.com/api/v4',
  gitlabWebhookSecret: null,
  host: '127.0.0.1',
  intakeLabels: [],
  intakeProvider: 'codex',
  intakeStart: 'todo',
  intakeWriteBack: 'work',
  isolation: 'worktree',
  logFilePath: null,
  logLevel: 'info',
  logMaxFiles: '14d',
  logMaxSize: '20m',
  maxPreviews: 4,
  modelCatalogRefreshHours: 24,
  networkAllow: [],
  networkDeny: [],
  networkMode: 'allow_list',
  personEmail: null,
  notificationChannels: [],
  notificationWebhookSecret: null,
  personName: null,
  port: 4310,
  previewPath: null,
  pullRequestReconcileIntervalSeconds: 60,
  rdInactivityTimeoutSeconds: 3600,
  readyPattern: null,
  runCommand: null,
  secrets: [],
  worktreeIdleDays: 7,
  worktreeLinks: [],
  worktreePool: 2,
  worktreeRoot: null,
  worktreeSetupCommand: null,
  worktreeSubdirectory: null,
  worktreeTeardownCommand: null,
};

export type ConfigurationKey = keyof ConfigurationValues;
export const CONFIGURATION_KEYS = Object.keys(CONFIGURATION_DEFAULTS) as ConfigurationKey[];

/** Numbers whose default is null (none): the environment's text is read as a number for them too. */
export const NULLABLE_NUMBER_KEYS: readonly ConfigurationKey[] = ['defaultBudgetMaxCostUsd', 'defaultBudgetMaxTokens'];

/** Fields a running manager applies at once; every other field takes effect on restart. */
export const LIVE_CONFIGURATION_KEYS: readonly ConfigurationKey[] = [
  'agentEnvironmentPass',
  'agentProcessLimit',
  'agentShmSizeMb',
  'agentTmpSizeMb',
  'agentWritablePaths',
  'cancelledRequirementRetentionDays',
  'claudeExecutable',
  'codexExecutable',
  'defaultBudgetMaxCostUsd',
  'defaultBudgetMaxTokens',
  'doneRequirementRetentionDays',
  'extraClaudeModels',
  'extraCodexModels',
  'githubWebhookSecret',
  'gitlabWebhookSecret',
  'intakeLabels',
  'intakeProvider',
  'intakeStart',
  'intakeWriteBack',
  'isolation',
  'logLevel',
  'maxPreviews',
  'modelCatalogRefreshHours',
  'networkAllow',
  'networkDeny',
  'networkMode',
  'notificationChannels',
  'notificationWebhookSecret',
  'previewPath',
  'pullRequestReconcileIntervalSeconds',
  'rdInactivityTimeoutSeconds',
  'readyPattern',
  'runCommand',
  'secrets',
  'worktreeIdleDays',
  'worktreeLinks',
  'worktreePool',
  'worktreeRoot',
  'worktreeSetupCommand',
  'worktreeSubdirectory',
  'worktreeTeardownCommand',
];

const ORIGIN = /^https?:\/\/[A-Za-z0-9.\-[\]:]+$/;
const SIZE = /^[1-9]\d{0,9}[kmg]?$/;
const FILES = /^[1-9]\d{0,5}d?$/;
/** A relative path inside the workspace: no leading slash, no `..` segment, no NUL. */
/** An absolute path or one in HOME (`~/…`), without a `..` segment or NUL. */
const WRITABLE_PATH = /^(?:\/|~\/|~$)(?!.*(^|\/)\.\.(\/|$))[^\0]*$/;
/** A relative path inside the workspace: no leading slash, no `..` segment, no NUL. */
const RELATIVE_PATH = /^(?!\/)(?!.*(^|\/)\.\.(\/|$))[^\0]+$/;
/** A person's name: printable text (no control characters), not blank. */
/** A board's name: what a person types or an origin URL normalised (host/owner/repo), no spaces or controls. */
const BOARD_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/@+~-]*$/;
/** A URL path: starts with /, no spaces, controls or `..` segments. */
const PREVIEW_PATH = /^\/(?!.*(^|\/)\.\.(\/|$))[^\s\u0000-\u001f\u007f]*$/;
const PERSON_NAME = /^(?!\s*$)[^\u0000-\u001f\u007f-\u009f]+$/;
/** An email: one @, no spaces or control characters. */
const PERSON_EMAIL = /^[^\s@]+@[^\s@]+$/;

/**
 * Every configuration field, all optional: the PATCH body, and the shape a config file or the
 * launch overrides are checked against before anything uses them.
 */
export class UpdateConfigurationDto implements Partial<ConfigurationValues> {
  @OptionalTextList({
    description:
      "Variables of the manager's environment agents see besides what a shell and their CLI need (a name, or a prefix ending in *); everything else (GITHUB_TOKEN, SSH_AUTH_SOCK, cloud credentials…) is left out (applied to the next run)",
    max: 200,
    maxLength: 200,
    pattern: VARIABLE_PATTERN,
  })
  agentEnvironmentPass?: string[];

  @OptionalEnum(
    AGENT_ISOLATION_MODES,
    "auto: agents run in a sandbox hiding the workspaces' data (bubblewrap) where the machine allows it (default); off: never (restart required)",
  )
  agentIsolation?: ConfigurationValues['agentIsolation'];

  @OptionalInt({
    description:
      'Processes (threads included, as the kernel counts them) one agent run may have at once, its setup included: a run that tries more fails with the reason (applied to the next run)',
    max: 1_000_000,
    min: 16,
  })
  agentProcessLimit?: number;

  @OptionalInt({ description: "MB of one run's private /dev/shm (applied to the next run)", max: 1_048_576, min: 1 })
  agentShmSizeMb?: number;

  @OptionalInt({
    description:
      "MB of one run's temporary space (its own /tmp, /var/tmp and $TMPDIR, gone with it): a run that fills it fails with the reason (applied to the next run)",
    max: 1_048_576,
    min: 16,
  })
  agentTmpSizeMb?: number;

  @OptionalTextList({
    description:
      "Paths agents may write besides their own worktree and repository, their CLI's state and toolchain caches (absolute or ~/…; applied to the next run)",
    max: 100,
    maxLength: 4096,
    pattern: WRITABLE_PATH,
  })
  agentWritablePaths?: string[];

  /** Origin (scheme://host[:port]) allowed to call the API from a browser besides the dashboard itself. */
  @OptionalText({
    description: 'Extra browser origin allowed to call the API (CORS/CSRF), or null',
    example: 'http://localhost:4200',
    max: 200,
    nullable: true,
    pattern: ORIGIN,
  })
  allowedOrigin?: string | null;

  @OptionalEnum(
    AUTHENTICATION_MODES,
    'token: every API call needs the local token (default); none: no authentication at all (restart required)',
  )
  authentication?: ConfigurationValues['authentication'];

  @OptionalText({
    description:
      "Team mode (PostgreSQL only, restart required): the board this manager joins as a runner; 'origin' names it after the repository's origin URL (so clones of one repository meet); null: this workspace's own schema",
    example: 'origin',
    max: 200,
    min: 1,
    nullable: true,
    pattern: BOARD_NAME,
  })
  board?: string | null;

  @OptionalInt({ description: 'Days a cancelled Requirement is kept before it is purged', max: 36_500, min: 0 })
  cancelledRequirementRetentionDays?: number;

  @OptionalText({
    description: 'The Claude Code executable (a name on PATH or an absolute path)',
    example: 'claude',
    max: 4096,
    min: 1,
  })
  claudeExecutable?: string;

  @OptionalText({
    description: 'The Codex CLI executable (a name on PATH or an absolute path)',
    example: 'codex',
    max: 4096,
    min: 1,
  })
  codexExecutable?: string;

  @OptionalText({
    description: 'SQLite database file, or null for factory.sqlite in the data directory',
    max: 4096,
    min: 1,
    nullable: true,
  })
  databasePath?: string | null;

  @OptionalInt({
    description: 'PostgreSQL: connections of the read pool at most (restart required)',
    max: 1000,
    min: 1,
  })
  databasePoolSize?: number;

  @OptionalInt({
    description: 'PostgreSQL: seconds after which a statement is cancelled; 0 for no limit (restart required)',
    max: 86_400,
    min: 0,
  })
  databaseStatementTimeoutSeconds?: number;

  @OptionalEnum(
    DATABASE_TLS_MODES,
    'PostgreSQL TLS (restart required): url: as the URL says (sslmode); require: TLS without verifying the certificate; verify: TLS, certificate verified',
  )
  databaseTls?: ConfigurationValues['databaseTls'];

  @OptionalText({
    description:
      'postgres://user:password@host:port/database to keep the store on PostgreSQL (one schema per workspace), or null for SQLite (restart required). Read back without its password',
    example: 'postgres://agent_manager@db.internal:5432/agent_manager',
    max: 4096,
    min: 11,
    nullable: true,
    pattern: /^postgres(ql)?:\/\/\S+$/,
  })
  databaseUrl?: string | null;

  @OptionalNumber({
    description:
      'US dollars a new Requirement may spend when its creator names no budget; null for no cost limit (applies to Requirements created from now on)',
    max: LIMITS.budgetMaxCostUsd,
    min: 0.01,
    nullable: true,
  })
  defaultBudgetMaxCostUsd?: number | null;

  @OptionalInt({
    description:
      'Tokens a new Requirement may use when its creator names no budget; null for no token limit (applies to Requirements created from now on)',
    max: LIMITS.budgetMaxTokens,
    min: 1,
    nullable: true,
  })
  defaultBudgetMaxTokens?: number | null;

  @OptionalInt({ description: 'Days a done Requirement is kept before it is purged', max: 36_500, min: 0 })
  doneRequirementRetentionDays?: number;

  @OptionalTextList({
    description:
      "Claude Code models the model catalog offers besides its aliases and the Anthropic API's listing (applied at once)",
    max: 100,
    maxLength: LIMITS.modelLength,
    pattern: MODEL_NAME_PATTERN,
  })
  extraClaudeModels?: string[];

  @OptionalTextList({
    description: "Codex models the model catalog offers besides Codex's own listing (applied at once)",
    max: 100,
    maxLength: LIMITS.modelLength,
    pattern: MODEL_NAME_PATTERN,
  })
  extraCodexModels?: string[];

  @OptionalText({
    description:
      'GitHub API root (restart required): https://api.github.com or https://<host>/api/v3 for GitHub Enterprise',
    example: 'https://api.github.com',
    max: 500,
    min: 8,
    pattern: /^https?:\/\/[^\s/]+(\/\S*)?$/,
  })
  githubApiUrl?: string;

  @OptionalText({
    description:
      'Secret of the GitHub webhook (POST /api/github/webhook); null turns the webhook off. Write-only: read back as null',
    max: 1024,
    min: 8,
    nullable: true,
  })
  githubWebhookSecret?: string | null;

  @OptionalText({
    description:
      'GitLab API root (restart required): https://gitlab.com/api/v4, or https://<host>/api/v4 for a self-hosted GitLab',
    example: 'https://gitlab.com/api/v4',
    max: 500,
    min: 8,
    pattern: /^https?:\/\/[^\s/]+(\/\S*)?$/,
  })
  gitlabApiUrl?: string;

  @OptionalText({
    description:
      'Secret token of the GitLab webhook (POST /api/gitlab/webhook, sent as X-Gitlab-Token); null turns the webhook off. Write-only: read back as null',
    max: 1024,
    min: 8,
    nullable: true,
  })
  gitlabWebhookSecret?: string | null;

  @OptionalEnum(
    INTAKE_WRITE_BACK_MODES,
    'What Agent Manager writes to an issue a Requirement was imported from: work (a comment when work starts and when a PR is opened; a local land closes it naming the commit; default), work_and_cancel (and a comment when the Requirement is cancelled), off (nothing)',
  )
  intakeWriteBack?: ConfigurationValues['intakeWriteBack'];

  @OptionalTextList({
    description:
      "Labels that take an issue in: an issue of the workspace's GitHub or GitLab repositories that has or gains one becomes a Requirement (none: no automatic intake)",
    max: 20,
    maxLength: 50,
    pattern: /^[^,\u0000-\u001f]+$/,
  })
  intakeLabels?: string[];

  @OptionalEnum(
    INTAKE_START_MODES,
    'What an issue taken in by label becomes: todo (a Requirement waiting for a person to start it; default) or start (started at once)',
  )
  intakeStart?: ConfigurationValues['intakeStart'];

  @OptionalEnum(PROVIDERS, 'The agent a Requirement taken in by label gets: codex (default) or claude-code')
  intakeProvider?: ConfigurationValues['intakeProvider'];

  @OptionalText({
    description: 'Interface to listen on (restart required)',
    example: '127.0.0.1',
    max: 255,
    min: 1,
    pattern: /^[A-Za-z0-9.\-:[\]]+$/,
  })
  host?: string;

  @OptionalEnum(
    ISOLATION_MODES,
    'worktree: each Requirement works in its own git worktree and branch (default; in_place where the workspace is not a git repository); in_place: in the checkout itself',
  )
  isolation?: ConfigurationValues['isolation'];

  @OptionalText({
    description: 'Log file, or null for logs/agent-manager.log in the data directory',
    max: 4096,
    min: 1,
    nullable: true,
  })
  logFilePath?: string | null;

  @OptionalEnum(LOG_LEVELS, 'Log level (applied at once)')
  logLevel?: ConfigurationValues['logLevel'];

  @OptionalText({
    description: 'Files (e.g. 10) or days (e.g. 14d) of logs to keep',
    example: '14d',
    max: 7,
    min: 1,
    pattern: FILES,
  })
  logMaxFiles?: string;

  @OptionalText({
    description: 'Size at which the log rotates (bytes, or with k/m/g)',
    example: '20m',
    max: 11,
    min: 1,
    pattern: SIZE,
  })
  logMaxSize?: string;

  @OptionalInt({
    description:
      'Hours between automatic refreshes of the model catalog (also done at start when due); 0: only on demand',
    max: 8760,
    min: 0,
  })
  modelCatalogRefreshHours?: number;

  @HostRuleList(
    "Hosts agent runs may reach besides the defaults (provider APIs, GitHub and the remotes' hosts, the lock files' registries): host, *.domain (its subdomains), either with :port, or an IP (127.0.0.1:8080, [::1]:443). A name that resolves to this machine or link-local is refused unless written as an IP (applied to the next connection)",
  )
  networkAllow?: string[];

  @HostRuleList(
    'Hosts agent runs may never reach; wins over every allow, the defaults too (applied to the next connection)',
  )
  networkDeny?: string[];

  @OptionalEnum(
    NETWORK_MODES,
    'allow_list: agent runs reach the allowed hosts only, through a filtering proxy (default); offline: only the model API and Agent Manager; open: the whole network, no proxy (applied to the next run)',
  )
  networkMode?: ConfigurationValues['networkMode'];

  @OptionalText({
    description:
      "The email of the person this manager acts for (restart required); null: git's global user.email, or none",
    example: 'ada@example.com',
    max: LIMITS.personEmailLength,
    min: 3,
    nullable: true,
    pattern: PERSON_EMAIL,
  })
  personEmail?: string | null;

  @NotificationChannelList(
    'Where Needs-you items are sent outside the browser (issue 47): {id, kind: webhook|slack|ntfy|desktop, url?, reasons?, person?, delaySeconds?}; each item is sent at most once per channel, retried for 24 h (applied at once)',
  )
  notificationChannels?: ConfigurationValues['notificationChannels'];

  @OptionalText({
    description:
      'Signs what webhook channels receive (X-Agent-Manager-Signature: sha256=HMAC of "<timestamp>.<body>"); null: unsigned. Write-only: read back as null',
    max: 1024,
    min: 16,
    nullable: true,
  })
  notificationWebhookSecret?: string | null;

  @OptionalText({
    description:
      "The name events and messages show for the person this manager acts for (restart required); null: git's global user.name, else the OS account",
    example: 'Ada Lovelace',
    max: LIMITS.personNameLength,
    min: 1,
    nullable: true,
    pattern: PERSON_NAME,
  })
  personName?: string | null;

  @OptionalInt({ description: 'TCP port (restart required); 0 picks a free port', max: 65_535, min: 0 })
  port?: number;

  @OptionalInt({
    description: 'Seconds between pull request reconciliations; 0 disables polling',
    max: 2_147_483,
    min: 0,
  })
  pullRequestReconcileIntervalSeconds?: number;

  @OptionalInt({
    description: 'An RD run that prints nothing for this many seconds is ended as timed out',
    max: 604_800,
    min: 1,
  })
  rdInactivityTimeoutSeconds?: number;

  @SecretList(
    "Secrets agents never see (applied to the next run): {name, file?, host?, header?, format?}. The value comes from the manager's variable `name`, or from `file` (absolute, mode 0600 or stricter); it is given as the variable `name` to a setup command the person wrote in a worktree no agent has had, and, with host and header, added by the run's proxy to that host's requests (format: e.g. \"Bearer {value}\"; without a port in host, over TLS only); each file is unreadable in every sandbox. Any value that appears in a trace, a message, a run's error or a saved patch is masked before it is stored",
  )
  secrets?: ConfigurationValues['secrets'];

  @OptionalInt({
    description:
      "Days without a run after which a done Requirement's worktree is removed (its branch stays unless merged)",
    max: 36_500,
    min: 0,
  })
  worktreeIdleDays?: number;

  @OptionalText({
    description:
      "A Requirement's preview: shell command run in its working copy, in its agent's sandbox, with AGENT_MANAGER_PORT; null for .agent-manager/run as the person's base branch has it",
    max: 4096,
    min: 1,
    nullable: true,
  })
  runCommand?: string | null;

  @OptionalText({
    description: "What a preview's URL adds after its port, starting with / (e.g. /app), or null",
    max: 1000,
    min: 1,
    nullable: true,
    pattern: PREVIEW_PATH,
  })
  previewPath?: string | null;

  @OptionalText({
    description:
      'A preview is ready when a line of its output matches this regular expression (e.g. "Local:\\s+http"), or null: when its first port accepts connections',
    max: 500,
    min: 1,
    nullable: true,
  })
  @IsRegularExpression()
  readyPattern?: string | null;

  @OptionalInt({
    description:
      "Previews running at once; a start past it stops the oldest one whose Requirement's agent is not running",
    max: 50,
    min: 1,
  })
  maxPreviews?: number;

  @OptionalTextList({
    description:
      'Gitignored paths, relative to the workspace root, symlinked into every worktree instead of copied (e.g. node_modules)',
    max: 100,
    maxLength: 1024,
    pattern: RELATIVE_PATH,
  })
  worktreeLinks?: string[];

  @OptionalInt({
    description:
      "Working copies kept prepared at the base branch's tip (files, links and setup done) and handed to the next Requirements that start; 0: none",
    max: 10,
    min: 0,
  })
  worktreePool?: number;

  @OptionalText({
    description:
      'Directory holding the worktrees, or null for worktrees/ in the Agent Manager home (never inside a data directory)',
    max: 4096,
    min: 1,
    nullable: true,
    pattern: /^\//,
  })
  worktreeRoot?: string | null;

  @OptionalText({
    description:
      'Shell command run once in a new worktree before its first run (time-limited; failure fails the run), or null for .agent-manager/setup',
    max: 4096,
    min: 1,
    nullable: true,
  })
  worktreeSetupCommand?: string | null;

  @OptionalText({
    description: "Folder of the worktree (relative) that is the agent's working directory, for a monorepo; or null",
    max: 1024,
    min: 1,
    nullable: true,
    pattern: RELATIVE_PATH,
  })
  worktreeSubdirectory?: string | null;

  @OptionalText({
    description:
      'Shell command run in a worktree before it is removed (time-limited, failure ignored), or null for .agent-manager/teardown',
    max: 4096,
    min: 1,
    nullable: true,
  })
  worktreeTeardownCommand?: string | null;
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
