import { z } from 'zod';

import {
  INTERRUPT_MODES,
  LIMITS,
  PROVIDERS,
  REASONING_EFFORTS,
  REQUIREMENT_STATUSES,
  TIMER_STATUSES,
} from '@libs/contracts';

import { ToolDefinition, defineTool } from '@server/agent-tools/tool-definition';
import type { OwnerApi } from './owner-api';

// The tools of `agent-manager mcp`: what the owner does in the dashboard, for their own assistant,
// each one call of the owner API (GET/POST /api/…) with the workspace's local token. Limits and
// enums come from libs/contracts; the server validates again and decides.

const id = (what: string) => z.string().trim().min(1).max(100).describe(what);
const limit = (what: string) =>
  z
    .number()
    .int()
    .min(1)
    .max(LIMITS.pageSizeMax)
    .optional()
    .describe(`${what} (1–${LIMITS.pageSizeMax}, default ${LIMITS.pageSizeDefault})`);
const cursor = z.string().min(1).max(512).optional().describe('nextCursor of the previous page, to read on');
const text = (max: number, what: string) =>
  z.string().max(max).regex(/\S/, 'must not be blank').describe(`${what} (at most ${max} characters)`);

export const OWNER_TOOL_NAMES = [
  'list_requirements',
  'get_requirement',
  'create_requirement',
  'reply',
  'start',
  'interrupt',
  'move',
  'confirm',
  'list_pull_requests',
  'request_review',
  'list_timers',
] as const;

/** Messages of a Requirement returned by get_requirement unless asked otherwise: enough to see where it stands. */
const CONVERSATION_PAGE = 20;

export function ownerTools(api: OwnerApi): ToolDefinition[] {
  return [
    defineTool({
      description: 'List Requirements, newest first, optionally only those in one status. Follow nextCursor for more.',
      input: {
        cursor,
        limit: limit('How many'),
        status: z.enum(REQUIREMENT_STATUSES).optional().describe('Only Requirements in this status'),
      },
      name: 'list_requirements',
      readOnly: true,
      run: (query) =>
        api.call('list requirements', (client, signal) =>
          client.GET('/api/requirements', { params: { query }, signal }),
        ),
      title: 'List Requirements',
    }),
    defineTool({
      description:
        'One Requirement (status, session, provider) with a page of its conversation in order: the first messages, or those after `afterSequence`; follow messages.nextCursor for more.',
      input: {
        afterSequence: z.number().int().min(0).optional().describe('Only messages after this sequence number'),
        cursor,
        limit: z
          .number()
          .int()
          .min(1)
          .max(LIMITS.pageSizeMax)
          .optional()
          .describe(`Messages in the page (1–${LIMITS.pageSizeMax}, default ${CONVERSATION_PAGE})`),
        requirementId: id('The Requirement (req_…)'),
      },
      name: 'get_requirement',
      readOnly: true,
      run: async ({ afterSequence, cursor: after, limit: size, requirementId }) => {
        const path = { id: requirementId };
        const requirement = await api.call('get requirement', (client, signal) =>
          client.GET('/api/requirements/{id}', { params: { path }, signal }),
        );
        const messages = await api.call('list messages', (client, signal) =>
          client.GET('/api/requirements/{id}/messages', {
            params: { path, query: { afterSequence, cursor: after, limit: size ?? CONVERSATION_PAGE } },
            signal,
          }),
        );
        return { messages, requirement };
      },
      title: 'Read a Requirement and its conversation',
    }),
    defineTool({
      description: 'Create a Requirement (todo, with its idle RD session). Start it with `start`.',
      input: {
        description: z
          .string()
          .max(LIMITS.descriptionLength)
          .optional()
          .describe(`What to build, in Markdown (at most ${LIMITS.descriptionLength} characters)`),
        model: z
          .string()
          .min(1)
          .max(LIMITS.modelLength)
          .optional()
          .describe("Model for its agent (default: the CLI's own)"),
        provider: z.enum(PROVIDERS).describe('Which coding agent runs it'),
        reasoningEffort: z.enum(REASONING_EFFORTS).optional().describe('Reasoning effort'),
        title: text(LIMITS.titleLength, 'Short title'),
      },
      name: 'create_requirement',
      run: (body) =>
        api.call('create requirement', (client, signal) => client.POST('/api/requirements', { body, signal })),
      title: 'Create a Requirement',
    }),
    defineTool({
      description:
        "Reply in a Requirement's conversation as its owner: it starts a run, or waits (queued) behind the active one; a done Requirement is reopened.",
      input: { message: text(LIMITS.messageLength, 'The reply'), requirementId: id('The Requirement (req_…)') },
      name: 'reply',
      run: ({ message, requirementId }) =>
        api.call('reply', (client, signal) =>
          client.POST('/api/requirements/{id}/reply', {
            body: { message },
            params: { path: { id: requirementId } },
            signal,
          }),
        ),
      title: 'Reply to a Requirement',
    }),
    defineTool({
      description: "Start (or resume after a stop) a Requirement's RD session, optionally with a first message.",
      input: {
        message: z.string().max(LIMITS.messageLength).optional().describe('A message to start with'),
        requirementId: id('The Requirement (req_…)'),
      },
      name: 'start',
      run: ({ message, requirementId }) =>
        api.call('start', (client, signal) =>
          client.POST('/api/requirements/{id}/start', {
            body: { message },
            params: { path: { id: requirementId } },
            signal,
          }),
        ),
      title: 'Start a Requirement',
    }),
    defineTool({
      description:
        "Interrupt a Requirement's active run: `stop` ends it and pauses the session until start or a reply; `steer` ends it only when newer input waits.",
      input: {
        mode: z.enum(INTERRUPT_MODES).optional().describe('stop (default) or steer'),
        requirementId: id('The Requirement (req_…)'),
      },
      name: 'interrupt',
      run: ({ mode, requirementId }) =>
        api.call('interrupt', (client, signal) =>
          client.POST('/api/requirements/{id}/interrupt', {
            body: { mode: mode ?? 'stop' },
            params: { path: { id: requirementId } },
            signal,
          }),
        ),
      title: 'Interrupt a Requirement',
    }),
    defineTool({
      description:
        "Team mode: move a Requirement from another person's runner to this one (its runner is offline, or not running it). Its branch is fetched from origin and its agent goes on here as a new session given the conversation so far.",
      input: { requirementId: id('The Requirement (req_…)') },
      name: 'move',
      run: ({ requirementId }) =>
        api.call('move', (client, signal) =>
          client.POST('/api/requirements/{id}/move', { params: { path: { id: requirementId } }, signal }),
        ),
      title: 'Move a Requirement to this runner',
    }),
    defineTool({
      description: 'Accept a Requirement that waits for confirmation as done.',
      input: { requirementId: id('The Requirement (req_…)') },
      name: 'confirm',
      run: ({ requirementId }) =>
        api.call('confirm', (client, signal) =>
          client.POST('/api/requirements/{id}/confirm', { params: { path: { id: requirementId } }, signal }),
        ),
      title: 'Confirm a Requirement',
    }),
    defineTool({
      description:
        'List the pull requests the agents registered, optionally of one Requirement, with their status and head.',
      input: {
        cursor,
        limit: limit('How many'),
        requirementId: id('Only the PRs of this Requirement (req_…)').optional(),
      },
      name: 'list_pull_requests',
      readOnly: true,
      run: (query) =>
        api.call('list pull requests', (client, signal) =>
          client.GET('/api/pull-requests', { params: { query }, signal }),
        ),
      title: 'List pull requests',
    }),
    defineTool({
      description:
        "Ask an AI reviewer to review an open pull request's current head; its summary then reaches the PR's Requirement. One review at a time per PR.",
      input: {
        model: z.string().min(1).max(LIMITS.modelLength).optional().describe('Model for the reviewer'),
        prompt: z.string().max(LIMITS.reviewPromptLength).optional().describe('What the review should focus on'),
        provider: z.enum(PROVIDERS).describe('Which coding agent reviews'),
        pullRequestId: id('The pull request (as list_pull_requests returns its id)'),
        reasoningEffort: z.enum(REASONING_EFFORTS).optional().describe('Reasoning effort'),
      },
      name: 'request_review',
      run: ({ pullRequestId, ...body }) =>
        api.call('request review', (client, signal) =>
          client.POST('/api/pull-requests/{id}/review-requests', {
            body,
            params: { path: { id: pullRequestId } },
            signal,
          }),
        ),
      title: 'Request an AI review',
    }),
    defineTool({
      description: 'List timers (the wake-ups agents set), optionally of one Requirement or in one status.',
      input: {
        cursor,
        limit: limit('How many'),
        requirementId: id('Only the timers of this Requirement (req_…)').optional(),
        status: z.enum(TIMER_STATUSES).optional().describe('Only timers in this status'),
      },
      name: 'list_timers',
      readOnly: true,
      run: (query) =>
        api.call('list timers', (client, signal) => client.GET('/api/timers', { params: { query }, signal })),
      title: 'List timers',
    }),
  ];
}
