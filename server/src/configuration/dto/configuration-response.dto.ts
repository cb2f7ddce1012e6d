import { ApiProperty } from '@nestjs/swagger';

import {
  AGENT_ISOLATION_MECHANISMS,
  AGENT_ISOLATION_MODES,
  INTAKE_START_MODES,
  INTAKE_WRITE_BACK_MODES,
  PROVIDERS,
  type Provider,
  AgentIsolation,
  AgentIsolationMechanism,
  AgentIsolationMode,
  IntakeStartMode,
  IntakeWriteBackMode,
  AUTHENTICATION_MODES,
  AuthenticationMode,
  ConfigurationValues,
  DATABASE_TLS_MODES,
  DatabaseTlsMode,
  ISOLATION_MODES,
  IsolationMode,
  LOG_LEVELS,
  LogLevel,
  ManagerConfiguration,
  NETWORK_MODES,
  NetworkMode,
  PERSON_SOURCES,
  Person,
  PersonSource,
} from '@libs/contracts';

import { CONFIGURATION_KEYS, type ConfigurationKey } from '../../core/configuration/configuration.schema';
import { SecretDefinitionDto } from '../../core/secrets/secret-definitions';
import { NotificationChannelDto } from '../../core/configuration/notification-channels';
import { OptionalEnum } from '../../core/validation';

export class ConfigurationValuesDto implements ConfigurationValues {
  @ApiProperty({
    description: "Variables of the manager's environment agents see besides what a shell and their CLI need",
    type: [String],
  })
  agentEnvironmentPass!: string[];
  @ApiProperty({ enum: AGENT_ISOLATION_MODES }) agentIsolation!: AgentIsolationMode;
  @ApiProperty({ description: 'Processes (threads included) one agent run may have at once (its setup included)' })
  agentProcessLimit!: number;
  @ApiProperty({ description: "MB of one run's private /dev/shm" }) agentShmSizeMb!: number;
  @ApiProperty({ description: "MB of one run's temporary space (its own /tmp, /var/tmp and $TMPDIR)" })
  agentTmpSizeMb!: number;
  @ApiProperty({ description: 'Paths agents may write besides their own worktree (absolute or ~/…)', type: [String] })
  agentWritablePaths!: string[];
  @ApiProperty({ nullable: true, type: String }) allowedOrigin!: string | null;
  @ApiProperty({ description: 'Hosts agent runs may reach besides the defaults', type: [String] })
  networkAllow!: string[];
  @ApiProperty({ description: 'Hosts agent runs may never reach', type: [String] }) networkDeny!: string[];
  @ApiProperty({ enum: NETWORK_MODES }) networkMode!: NetworkMode;
  @ApiProperty({ enum: AUTHENTICATION_MODES }) authentication!: AuthenticationMode;
  @ApiProperty({
    description: "Team mode: the board this manager joins ('origin': named after the repository's origin URL), or null",
    nullable: true,
    type: String,
  })
  board!: string | null;
  @ApiProperty() cancelledRequirementRetentionDays!: number;
  @ApiProperty() claudeExecutable!: string;
  @ApiProperty() codexExecutable!: string;
  @ApiProperty({ nullable: true, type: String }) databasePath!: string | null;
  @ApiProperty() databasePoolSize!: number;
  @ApiProperty() databaseStatementTimeoutSeconds!: number;
  @ApiProperty({ enum: DATABASE_TLS_MODES }) databaseTls!: DatabaseTlsMode;
  @ApiProperty({ description: 'postgres://… without its password, or null (SQLite)', nullable: true, type: String })
  databaseUrl!: string | null;
  @ApiProperty({
    description: 'Cost limit (US dollars) of a new Requirement created without a budget, or null',
    nullable: true,
    type: Number,
  })
  defaultBudgetMaxCostUsd!: number | null;
  @ApiProperty({
    description: 'Token limit of a new Requirement created without a budget, or null',
    nullable: true,
    type: Number,
  })
  defaultBudgetMaxTokens!: number | null;
  @ApiProperty() doneRequirementRetentionDays!: number;
  @ApiProperty({ type: [String] }) extraClaudeModels!: string[];
  @ApiProperty({ type: [String] }) extraCodexModels!: string[];
  @ApiProperty() githubApiUrl!: string;
  @ApiProperty({
    description: 'Always null: the secret is write-only (see githubWebhookSecretConfigured)',
    nullable: true,
    type: String,
  })
  githubWebhookSecret!: string | null;
  @ApiProperty() gitlabApiUrl!: string;
  @ApiProperty({
    description: 'Always null: the secret is write-only (see gitlabWebhookSecretConfigured)',
    nullable: true,
    type: String,
  })
  gitlabWebhookSecret!: string | null;
  @ApiProperty() host!: string;
  @ApiProperty({ type: [String] }) intakeLabels!: string[];
  @ApiProperty({ enum: INTAKE_START_MODES }) intakeStart!: IntakeStartMode;
  @ApiProperty({ enum: PROVIDERS }) intakeProvider!: Provider;
  @ApiProperty({ enum: INTAKE_WRITE_BACK_MODES }) intakeWriteBack!: IntakeWriteBackMode;
  @ApiProperty({ enum: ISOLATION_MODES }) isolation!: IsolationMode;
  @ApiProperty({ nullable: true, type: String }) logFilePath!: string | null;
  @ApiProperty({ enum: LOG_LEVELS }) logLevel!: LogLevel;
  @ApiProperty() logMaxFiles!: string;
  @ApiProperty() logMaxSize!: string;
  @ApiProperty() modelCatalogRefreshHours!: number;
  @ApiProperty({
    description: "The configured person's email, or null (git's user.email, or none)",
    nullable: true,
    type: String,
  })
  personEmail!: string | null;
  @ApiProperty({
    description: "The configured person's name, or null (git's user.name, else the OS account)",
    nullable: true,
    type: String,
  })
  personName!: string | null;
  @ApiProperty() port!: number;
  @ApiProperty() pullRequestReconcileIntervalSeconds!: number;
  @ApiProperty() rdInactivityTimeoutSeconds!: number;
  @ApiProperty({ description: 'Secrets agents never see (names and sources only)', type: [SecretDefinitionDto] })
  secrets!: SecretDefinitionDto[];
  @ApiProperty({ description: 'Where Needs-you items are sent outside the browser', type: [NotificationChannelDto] })
  notificationChannels!: NotificationChannelDto[];
  @ApiProperty({
    description: 'Always null: the secret is write-only (see notificationWebhookSecretConfigured)',
    nullable: true,
    type: String,
  })
  notificationWebhookSecret!: string | null;
  @ApiProperty() worktreeIdleDays!: number;
  @ApiProperty({ nullable: true, type: String }) runCommand!: string | null;
  @ApiProperty({ nullable: true, type: String }) previewPath!: string | null;
  @ApiProperty({ nullable: true, type: String }) readyPattern!: string | null;
  @ApiProperty() maxPreviews!: number;
  @ApiProperty({ type: [String] }) worktreeLinks!: string[];
  @ApiProperty() worktreePool!: number;
  @ApiProperty({ nullable: true, type: String }) worktreeRoot!: string | null;
  @ApiProperty({ nullable: true, type: String }) worktreeSetupCommand!: string | null;
  @ApiProperty({ nullable: true, type: String }) worktreeSubdirectory!: string | null;
  @ApiProperty({ nullable: true, type: String }) worktreeTeardownCommand!: string | null;
}

export class ConfigurationResponseDto implements ManagerConfiguration {
  @ApiProperty({ description: 'The configuration file' }) path!: string;
  @ApiProperty({ description: 'What the file holds (defaults filled in)', type: ConfigurationValuesDto })
  values!: ConfigurationValuesDto;
  @ApiProperty({
    description: 'What this process runs with: values plus launch flags and CODE_FACTORY_* variables',
    type: ConfigurationValuesDto,
  })
  effective!: ConfigurationValuesDto;
  @ApiProperty({
    description: 'Fields overridden for this process by a flag or variable',
    enum: CONFIGURATION_KEYS,
    isArray: true,
  })
  overriddenFields!: ConfigurationKey[];
  @ApiProperty({ description: 'Whether a webhook secret is set (the secret itself is never returned)' })
  githubWebhookSecretConfigured!: boolean;
  @ApiProperty({ description: 'Whether a GitLab webhook secret is set (the secret itself is never returned)' })
  gitlabWebhookSecretConfigured!: boolean;
  @ApiProperty({ description: 'Whether a notification webhook secret is set (never returned)' })
  notificationWebhookSecretConfigured!: boolean;
  @ApiProperty({
    description: 'Fields a change applies to at once; every other field needs a restart',
    enum: CONFIGURATION_KEYS,
    isArray: true,
  })
  liveFields!: ConfigurationKey[];
  @ApiProperty() restartRequired!: boolean;
  @ApiProperty({
    description: 'Changed fields that take effect after a restart',
    enum: CONFIGURATION_KEYS,
    isArray: true,
  })
  restartRequiredFields!: ConfigurationKey[];
}

export class EventLoopDelayDto {
  @ApiProperty() p50!: number;
  @ApiProperty() p99!: number;
  @ApiProperty() max!: number;
}

export class MetricsResponseDto {
  @ApiProperty() activeRuns!: number;
  @ApiProperty({ description: 'Event-loop delay in ms since start or the last reset', type: EventLoopDelayDto })
  eventLoopDelayMs!: EventLoopDelayDto;
  @ApiProperty() heapUsedBytes!: number;
  @ApiProperty() rssBytes!: number;
  @ApiProperty() sseClients!: number;
  @ApiProperty() uptimeSeconds!: number;
}

export class MetricsQueryDto {
  @OptionalEnum(['true', 'false'], 'Reset the event-loop delay histogram after reading it')
  reset?: 'true' | 'false';
}

export class AgentIsolationDto implements AgentIsolation {
  @ApiProperty({ description: "Whether agents run in the sandbox that hides the workspaces' data directories" })
  enabled!: boolean;
  @ApiProperty({
    description: 'What isolates them, or null',
    enum: AGENT_ISOLATION_MECHANISMS,
    nullable: true,
    type: String,
  })
  mechanism!: AgentIsolationMechanism | null;
  @ApiProperty({ description: 'Why agents are not isolated, or null when they are', nullable: true, type: String })
  reason!: string | null;
}

export class HealthResponseDto {
  @ApiProperty({
    description: "Whether agents are isolated from the owner's credentials (see docs/security.md)",
    type: AgentIsolationDto,
  })
  agentIsolation!: AgentIsolationDto;
  @ApiProperty() ok!: boolean;
  @ApiProperty() version!: string;
  @ApiProperty() workspaceRoot!: string;
}

export class PersonDto implements Person {
  @ApiProperty({
    description: 'Stable across managers: derived from the email, or the name without one',
    example: 'person_3f2a…',
  })
  id!: string;
  @ApiProperty({ example: 'Ada Lovelace' }) name!: string;
  @ApiProperty({ nullable: true, type: String }) email!: string | null;
  @ApiProperty({
    description: "Where the name came from: personName in the configuration, git's global user.name, or the OS account",
    enum: PERSON_SOURCES,
  })
  source!: PersonSource;
}

export class WorkspaceResponseDto {
  @ApiProperty({
    description:
      'Who "you" are: the person requests with the owner\'s credentials act as, named on their events and messages',
    type: PersonDto,
  })
  person!: PersonDto;
  @ApiProperty() root!: string;
  @ApiProperty() dataDirectory!: string;
  @ApiProperty() databasePath!: string;
  @ApiProperty() logFilePath!: string;
  @ApiProperty() attachmentsDirectory!: string;
  @ApiProperty({ description: "Where this workspace's Requirement worktrees are (<worktree root>/<workspace hash>)" })
  worktreesDirectory!: string;
  @ApiProperty({
    description: 'Bytes on disk used by those worktrees (symlinked files not counted; measured at most once a minute)',
  })
  worktreesDiskBytes!: number;
  @ApiProperty({ description: 'How many worktrees exist there' }) worktreeCount!: number;
  @ApiProperty({
    description:
      "Team mode: this manager's runner on its board (a Requirement whose runner differs runs elsewhere), or null off a board",
    nullable: true,
    type: String,
  })
  runnerId!: string | null;
}
