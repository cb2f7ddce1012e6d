import { z } from 'zod';

import {
  FORGES,
  AGENT_REQUIREMENT_ACTIONS,
  LIMITS,
  PROVIDERS,
  PULL_REQUEST_STATUSES,
  REASONING_EFFORTS,
} from '@libs/contracts';

import { type AgentOperations, PREVIEW_WAIT_MAX_SECONDS } from './agent-operations';
import { ToolDefinition, defineTool } from './tool-definition';

// The run's MCP tools (served by the manager at `/api/agent/mcp`, and on stdio by
// `code-factory-cli mcp`), one per code-factory-cli command, with the limits and enums
// of libs/contracts. The schemas catch a malformed call before it leaves the process; the agent
// API validates again and alone decides scope (the run's credential, its own Requirement).

const id = (what: string) => z.string().trim().min(1).max(100).describe(what);
const text = (max: number, what: string) =>
  z.string().max(max).regex(/\S/, 'must not be blank').describe(`${what} (at most ${max} characters)`);

/** What the MCP server tells the model its tools are for. */
export const AGENT_TOOLS_INSTRUCTIONS =
  "Agent Manager's tools for this agent run: register pull requests, propose and act on follow-up Requirements, message related Requirements, see whether your branch conflicts with its base or other work, answer the person's review comments, and set timers. They act with this run's own credential: the server refuses what is out of its scope, and a refusal comes back as a tool error with the reason.";

export const AGENT_TOOL_NAMES = [
  'register_pull_request',
  'propose_requirement',
  'requirement_action',
  'list_related',
  'message_related',
  'requirement_landing',
  'register_timer',
  'list_timers',
  'cancel_timer',
  'review_comments',
  'reply_review_comment',
  'preview_start',
  'preview_status',
  'preview_output',
] as const;

export function agentTools(operations: AgentOperations): ToolDefinition[] {
  const tools = [
    defineTool({
      description:
        "Register a pull request (or a GitLab merge request) you opened for the current Requirement (call again to refresh its title, branches and head SHA). With `url` alone Agent Manager asks the forge for the rest (when it has a token for it); otherwise give every field. Fields given explicitly win over the forge's.",
      input: {
        baseBranch: z.string().min(1).max(255).optional().describe('Branch it merges into'),
        forge: z.enum(FORGES).optional().describe('github (default) or gitlab; taken from url when given'),
        headBranch: z.string().min(1).max(255).optional().describe('Branch it merges from'),
        headSha: z.string().min(1).max(64).optional().describe('Head commit SHA'),
        number: z.number().int().min(1).max(2_147_483_647).optional().describe('The PR number'),
        repository: z
          .string()
          .min(1)
          .max(255)
          .optional()
          .describe("owner/name (GitLab: the project's full path, group/subgroup/project)"),
        status: z
          .enum(PULL_REQUEST_STATUSES)
          .optional()
          .describe('Its status now; used only the first time (afterwards GitHub decides)'),
        title: z.string().min(1).max(1000).optional().describe('PR title'),
        url: z
          .string()
          .min(1)
          .max(2000)
          .optional()
          .describe(
            "The PR's address, e.g. https://github.com/org/repo/pull/184, or an MR's: https://gitlab.com/group/project/-/merge_requests/12",
          ),
      },
      name: 'register_pull_request',
      run: (args) => operations.registerPullRequest(args),
      title: 'Register a pull request',
    }),
    defineTool({
      description:
        'Propose a follow-up Requirement as a child of the current one. It stays todo unless `start` is true, and runs like its parent unless it names its own provider.',
      input: {
        autoReview: z
          .object({
            maxRounds: z
              .number()
              .int()
              .min(1)
              .max(LIMITS.autoReviewMaxRounds)
              .optional()
              .describe('At most this many review rounds per PR (default 3)'),
            provider: z
              .enum(PROVIDERS)
              .optional()
              .describe("The reviewer (default: the other agent than the new Requirement's)"),
          })
          .optional()
          .describe(
            'Have each new head of its open PRs reviewed by the other model, until a review finds nothing or after maxRounds',
          ),
        description: text(LIMITS.descriptionLength, 'What to build, in Markdown'),
        model: z
          .string()
          .min(1)
          .max(LIMITS.modelLength)
          .optional()
          .describe("Model for the new Requirement (default: the current one's when provider is not given)"),
        provider: z.enum(PROVIDERS).optional().describe("Agent for the new Requirement (default: the current one's)"),
        reasoningEffort: z.enum(REASONING_EFFORTS).optional().describe('Reasoning effort (default as for model)'),
        budget: z
          .object({
            maxCostUsd: z
              .number()
              .min(0.01)
              .max(LIMITS.budgetMaxCostUsd)
              .optional()
              .describe('US dollars its runs may cost (where the provider reports a cost)'),
            maxTokens: z
              .number()
              .int()
              .min(1)
              .max(LIMITS.budgetMaxTokens)
              .optional()
              .describe('Tokens (input + output) its runs may use'),
          })
          .optional()
          .describe(
            "What its runs may spend; a run that reaches it pauses for a person. At most what the current Requirement's tree has left under its budget (more is lowered, with warnings: [\"budget_clamped\"]); its usage counts against the current Requirement's budget too (default: that room, or the workspace's default budget)",
          ),
        start: z.boolean().optional().describe('Start its RD session at once instead of leaving it todo'),
        title: text(LIMITS.titleLength, 'Short title'),
      },
      name: 'propose_requirement',
      run: (args) => operations.propose(args),
      title: 'Propose a follow-up Requirement',
    }),
    defineTool({
      description:
        'Act on a Requirement this session proposed: start (or retry) its RD session, stop its running run, delete it (only while todo), or mark it done (only while waiting for confirmation).',
      input: {
        action: z.enum(AGENT_REQUIREMENT_ACTIONS).describe('start, stop, delete or done'),
        requirementId: id('The child Requirement (req_…) this session proposed'),
      },
      name: 'requirement_action',
      run: ({ action, requirementId }) => operations.act(requirementId, action),
      title: 'Act on a proposed Requirement',
    }),
    defineTool({
      description: "Show the current Requirement's direct parent and children: {parent, children}.",
      input: {},
      name: 'list_related',
      readOnly: true,
      run: () => operations.related(),
      title: 'List related Requirements',
    }),
    defineTool({
      description:
        "Send a message to the current Requirement's direct parent or one of its direct children. It lands in that conversation as your agent speaking, and starts that agent or waits behind its run.",
      input: {
        message: text(LIMITS.messageLength, 'The message text'),
        requirementId: id('The parent or child Requirement (req_…) to message'),
      },
      name: 'message_related',
      run: ({ message, requirementId }) => operations.message(requirementId, message),
      title: 'Message a related Requirement',
    }),
    defineTool({
      description:
        "Show the conflict radar for the current Requirement: whether its branch still merges cleanly onto its base (mergesCleanly, conflictPaths), how many base commits it lacks (behindBy), which other live Requirements' work conflicts with it and in which files (conflictsWith), and whether it has landed. When it conflicts with the base, rebase onto the base in your worktree and resolve those files now, before a person or the merge queue asks; `summary` says what to do.",
      input: {},
      name: 'requirement_landing',
      readOnly: true,
      run: () => operations.landing(),
      title: 'Show the conflict radar for this Requirement',
    }),
    defineTool({
      description:
        'Schedule a wake-up for the current Requirement: once after `afterSeconds`, or every `afterSeconds` with `repeat`. When it fires, a system message starting "Timer fired." wakes your session. Timers end when the Requirement is done or cancelled.',
      input: {
        afterSeconds: z
          .number()
          .int()
          .min(LIMITS.timerIntervalMinSeconds)
          .max(LIMITS.timerIntervalMaxSeconds)
          .describe(
            `Seconds until it fires (${LIMITS.timerIntervalMinSeconds}–${LIMITS.timerIntervalMaxSeconds}); with repeat, the interval`,
          ),
        description: text(
          LIMITS.timerDescriptionLength,
          'What to do when woken; it is repeated in the "Timer fired." message',
        ),
        repeat: z
          .boolean()
          .optional()
          .describe('Fire every afterSeconds until cancelled (missed occurrences are skipped, not replayed)'),
      },
      name: 'register_timer',
      run: (args) => operations.registerTimer(args),
      title: 'Register a timer',
    }),
    defineTool({
      description: "List the current Requirement's timers (IDs, descriptions, status, next occurrence).",
      input: {},
      name: 'list_timers',
      readOnly: true,
      run: () => operations.listTimers(),
      title: 'List timers',
    }),
    defineTool({
      description: 'Cancel an active timer of the current Requirement.',
      input: { timerId: id('The timer (tmr_…), as list_timers or register_timer returned it') },
      name: 'cancel_timer',
      run: ({ timerId }) => operations.cancelTimer(timerId),
      title: 'Cancel a timer',
    }),
    defineTool({
      description:
        "List the review comments the person sent on your Requirement's changes: each thread's id, path, lines (on the `new` side: your work; `old`: the merge base), the quoted lines, the comment, its state (sent, resolved, outdated: the lines changed since) and the replies.",
      input: {},
      name: 'review_comments',
      readOnly: true,
      run: () => operations.reviewComments(),
      title: 'List review comments',
    }),
    defineTool({
      description:
        'Answer a review comment in its thread (the person reads it there). Set `resolve` once you have done what it asks; it can be reopened.',
      input: {
        body: text(LIMITS.reviewReplyBytes, 'Your answer, in Markdown'),
        id: id('The review comment (rvc_…), as review_comments or the review message names it'),
        resolve: z.boolean().optional().describe('Resolve the thread with this answer'),
      },
      name: 'reply_review_comment',
      run: ({ body, id: commentId, resolve }) => operations.replyToReviewComment(commentId, body, resolve),
      title: 'Answer a review comment',
    }),
    defineTool({
      description:
        "Start (or restart) the current Requirement's preview: the person's run script (runCommand, or .agent-manager/run from the base branch) in your working copy, on AGENT_MANAGER_PORT, in your sandbox. With `waitSeconds` it answers once the app is ready (or has exited). Reach it at its `url` (curl and most HTTP clients go through your proxy, which lets it through); run your end-to-end tests against it.",
      input: {
        waitSeconds: z
          .number()
          .int()
          .min(0)
          .max(PREVIEW_WAIT_MAX_SECONDS)
          .optional()
          .describe(`Wait up to this many seconds for it to be ready (0–${PREVIEW_WAIT_MAX_SECONDS}; default 0)`),
      },
      name: 'preview_start',
      run: ({ waitSeconds }) => operations.startPreview(waitSeconds ?? 0),
      title: 'Start the preview',
    }),
    defineTool({
      description:
        "The current Requirement's preview: state (starting, ready, exited, stopped), url, ports, exit code, why it stopped, and its last lines.",
      input: {},
      name: 'preview_status',
      readOnly: true,
      run: () => operations.previewStatus(),
      title: "Show the preview's state",
    }),
    defineTool({
      description: "The current Requirement's preview output (its last lines, at most 5,000).",
      input: {
        lines: z
          .number()
          .int()
          .min(1)
          .max(5000)
          .optional()
          .describe('Only the last this many lines (default: all kept)'),
      },
      name: 'preview_output',
      readOnly: true,
      run: ({ lines }) => operations.previewOutput(lines),
      title: "Show the preview's output",
    }),
  ];
  return tools;
}
