// Resource shapes as the generated client describes them, under short names. Timers and review
// requests are written out by hand from the API contract until they are in the generated client.
import type { Schemas } from '@libs/api-client';

export type Requirement = Schemas['RequirementResponseDto'];
export type Session = Schemas['AgentSessionResponseDto'];
export type Run = Schemas['AgentRunResponseDto'];
export type Trace = Schemas['AgentTraceEventResponseDto'];
export type Message = Schemas['MessageResponseDto'];
export type Attachment = Schemas['AttachmentResponseDto'];
export type PullRequest = Schemas['PullRequestResponseDto'];
export type Configuration = Schemas['ConfigurationResponseDto'];
export type ConfigurationValues = Schemas['ConfigurationValuesDto'];
export type ConfigurationPatch = Schemas['UpdateConfigurationDto'];
export type CreateRequirement = Schemas['CreateRequirementDto'];

export type RequirementStatus = Requirement['status'];
export type SessionState = Session['state'];
export type PullRequestStatus = PullRequest['status'];
export type Provider = Requirement['provider'];
export type ReasoningEffort = NonNullable<Requirement['reasoningEffort']>;

export interface Timer {
  id: string;
  requirementId: string;
  description: string;
  schedule: 'once' | 'recurring';
  intervalSeconds: number;
  status: 'active' | 'completed' | 'cancelled';
  nextFireAt: string | null;
  lastFiredAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface CreateTimer {
  description: string;
  schedule: Timer['schedule'];
  intervalSeconds: number;
}

export interface ReviewRequest {
  id: string;
  pullRequestId: string;
  runId: string | null;
  provider: Provider;
  model: string | null;
  reasoningEffort: ReasoningEffort | null;
  targetHeadSha: string;
  status: 'running' | 'succeeded' | 'failed' | 'cancelled';
  requestedBy: string;
  error: string | null;
  /** True once the PR's head moved past the reviewed commit. */
  stale?: boolean;
  createdAt: string;
  finishedAt: string | null;
}

export interface CreateReviewRequest {
  provider: Provider;
  model?: string | null;
  reasoningEffort?: ReasoningEffort | null;
  prompt?: string;
}

export interface ManagerEvent {
  id: number;
  type: string;
  requirementId: string | null;
  sessionId: string | null;
  runId: string | null;
  payload: Record<string, unknown>;
  createdAt: string;
}

export const REQUIREMENT_COLUMNS = ['todo', 'doing', 'waiting_confirmation', 'done'] as const satisfies readonly RequirementStatus[];
export const PULL_REQUEST_COLUMNS = ['draft', 'open', 'closed', 'merged'] as const satisfies readonly PullRequestStatus[];
export const SESSION_COLUMNS = ['idle', 'running', 'waiting_human', 'failed', 'completed'] as const satisfies readonly SessionState[];
export const PROVIDERS = ['codex', 'claude-code'] as const satisfies readonly Provider[];
export const REASONING_EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'] as const satisfies readonly ReasoningEffort[];
export const MAX_ATTACHMENTS = 6;
