import { LIMITS } from '@libs/contracts';

import { neutralizeHeaders } from '../agents/prompt';
import type { ForgeIssue, ForgeIssueComment } from '../forges/forge-issues';

/** The issue's own text, at most (the rest of the description is for its comments). */
const BODY_MAX = 60_000;
/** One comment, at most. */
const COMMENT_MAX = 4_000;

/**
 * An imported Requirement's description: the issue's text, then its first comments, each cut
 * where it is too long, and said so (the person and the agent read the rest on the forge). The
 * whole stays within a description's limit. It is what the issue says, kept as text: links,
 * @mentions and /commands in it do nothing here, and it is never posted back (a pull request's
 * body names the issue instead).
 */
export function composeDescription(issue: ForgeIssue, comments: ForgeIssueComment[], moreComments: boolean): string {
  // A line of the issue or a comment that looks like one of our headers is escaped: nobody fakes a maintainer's comment.
  const body = neutralizeHeaders(issue.body.trim());
  const parts = [
    body === ''
      ? '(The issue has no description.)'
      : body.length > BODY_MAX
        ? `${body.slice(0, BODY_MAX)}\n\n[… the issue's text is cut here: ${body.length - BODY_MAX} more characters at ${issue.url}]`
        : body,
  ];
  const heading = `---\nImported from ${issue.url} (opened by @${issue.author ?? 'ghost'}).`;
  parts.push(comments.length === 0 ? heading : `${heading} Its comments:`);
  let size = parts.join('\n\n').length;
  let left = comments.length;
  for (const comment of comments) {
    const text = neutralizeHeaders(comment.body.trim());
    const block = [
      `### Comment by @${comment.author ?? 'ghost'} on ${comment.createdAt.slice(0, 10)} (${comment.url})`,
      '',
      text.length > COMMENT_MAX
        ? `${text.slice(0, COMMENT_MAX)}\n[… cut: ${text.length - COMMENT_MAX} more characters]`
        : text,
    ].join('\n');
    // Room kept for the closing line.
    if (size + block.length + 200 > LIMITS.descriptionLength) {
      break;
    }
    parts.push(block);
    size += block.length + 2;
    left--;
  }
  if (left > 0 || moreComments) {
    parts.push(`[More comments at ${issue.url}]`);
  }
  return parts.join('\n\n');
}
