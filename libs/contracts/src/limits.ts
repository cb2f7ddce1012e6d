/** Limits shared by the server (enforcement), the CLI and the dashboard (early feedback). */
export const LIMITS = {
  /** Most Requirements one Requirement may depend on. */
  dependencies: 20,
  /** Largest JSON request body. */
  jsonBodyBytes: 1024 * 1024,
  /** Largest single attachment. */
  attachmentBytes: 20 * 1024 * 1024,
  /** Attachments on one message. */
  attachmentsPerMessage: 6,
  /** Longest attachment file name (characters). */
  fileNameLength: 255,
  titleLength: 200,
  descriptionLength: 100_000,
  messageLength: 100_000,
  modelLength: 100,
  /** Page size bounds for list endpoints. */
  pageSizeDefault: 50,
  pageSizeMax: 200,
  /** Events replayed to one SSE connection before it is ended for the client to resume. */
  eventReplayMax: 200,
  timerDescriptionLength: 500,
  reviewPromptLength: 10_000,
  /** A review comment's (or a reply's) text, in UTF-8 bytes (issue 46). */
  reviewCommentBytes: 10 * 1024,
  /** Lines one review comment may span. */
  reviewCommentLines: 500,
  /** Review comments one Requirement may hold (replies not counted). */
  reviewCommentsPerRequirement: 1000,
  /** An answer in a review thread, in UTF-8 bytes (the agent's: short, and carried by the thread's events). */
  reviewReplyBytes: 4 * 1024,
  /** Replies in one review comment's thread. */
  reviewRepliesPerComment: 20,
  /** Rounds a review loop may run per PR (issue 18 §3). */
  autoReviewMaxRounds: 20,
  /** Timer intervals: one minute to one year, in seconds. */
  timerIntervalMinSeconds: 60,
  timerIntervalMaxSeconds: 31_536_000,
  /** Budget bounds: tokens fit the stores' 32-bit integer columns; cost in US dollars. */
  budgetMaxTokens: 2_000_000_000,
  budgetMaxCostUsd: 1_000_000,
  /** A person's name and email, as configured or read from git (longer values are cut). */
  personNameLength: 100,
  personEmailLength: 254,
} as const;

/**
 * A model name as the CLIs take it: a full name (`gpt-6.2-sol`, `claude-sonnet-4-5`) or an alias,
 * Claude Code's with a context suffix included (`sonnet[1m]`). Passed as one argument, never
 * through a shell.
 */
export const MODEL_NAME_PATTERN = /^[\w.:/@[\]-]+$/;
