// Resource shapes as the generated client describes them, under short names.
import type { Schemas } from '@libs/api-client';

export type Requirement = Schemas['RequirementResponseDto'];
/** A create or edit answer: the Requirement and what it flags (a model the catalog does not know). */
export type EditedRequirement = Schemas['EditedRequirementResponseDto'];
export type ModelCatalog = Schemas['ModelCatalogResponseDto'];
export type CatalogModel = Schemas['CatalogModelDto'];
type Session = Schemas['AgentSessionResponseDto'];
export type Run = Schemas['AgentRunResponseDto'];
export type Trace = Schemas['AgentTraceEventResponseDto'];
export type Message = Schemas['MessageResponseDto'];
export type Attachment = Schemas['AttachmentResponseDto'];
export type PullRequest = Schemas['PullRequestResponseDto'];
export type Configuration = Schemas['ConfigurationResponseDto'];
export type ConfigurationValues = Schemas['ConfigurationValuesDto'];
export type ConfigurationPatch = Schemas['UpdateConfigurationDto'];
export type CreateRequirement = Schemas['CreateRequirementDto'];
export type UpdateRequirement = Schemas['UpdateRequirementDto'];
export type SetDependencies = Schemas['SetDependenciesDto'];
export type Usage = Schemas['UsageResponseDto'];
/** A message with attachments, as a reply or along with a start. */
export type Reply = Schemas['ReplyDto'];
export type ReviewComment = Schemas['ReviewCommentDto'];
export type Checkpoint = Schemas['CheckpointDto'];

export type RequirementStatus = Requirement['status'];
export type SessionState = Session['state'];
export type PullRequestStatus = PullRequest['status'];
export type Provider = Requirement['provider'];
export type ReasoningEffort = NonNullable<Requirement['reasoningEffort']>;

export type Timer = Schemas['TimerResponseDto'];
export type SearchHit = Schemas['SearchHitDto'];
export type RequirementChanges = Schemas['RequirementChangesResponseDto'];
export type ChangedFile = Schemas['ChangedFileDto'];
export type CreateTimer = Schemas['CreateTimerDto'];
export type ReviewRequest = Schemas['ReviewRequestResponseDto'];
export type CreateReviewRequest = Schemas['CreateReviewRequestDto'];
export type RequirementLanding = Schemas['RequirementLandingResponseDto'];
export type LandRequirement = Schemas['LandRequirementDto'];
export type LandResult = Schemas['LandResponseDto'];
export type LandMethod = LandRequirement['method'];
export type LandingQueueItem = Schemas['LandingQueueItemDto'];

export const REQUIREMENT_COLUMNS = [
  'todo',
  'doing',
  'waiting_confirmation',
  'done',
] as const satisfies readonly RequirementStatus[];
export const PULL_REQUEST_COLUMNS = [
  'draft',
  'open',
  'closed',
  'merged',
] as const satisfies readonly PullRequestStatus[];
export const SESSION_COLUMNS = [
  'idle',
  'running',
  'waiting_human',
  'failed',
  'completed',
] as const satisfies readonly SessionState[];
export const PROVIDERS = ['codex', 'claude-code'] as const satisfies readonly Provider[];
export const REASONING_EFFORTS = [
  'low',
  'medium',
  'high',
  'xhigh',
  'max',
] as const satisfies readonly ReasoningEffort[];
export const MAX_ATTACHMENTS = 6;
/** The land menu's options, in its order. */
export const LAND_METHODS = ['merge', 'squash', 'rebase', 'pull_request'] as const satisfies readonly LandMethod[];
export type NetworkBlocked = Schemas['NetworkBlockedDto'];
export type RequirementNetwork = Schemas['RequirementNetworkDto'];
