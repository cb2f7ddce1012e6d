import type { ReviewCommentEntity } from './review-comment.entities';

/** Quoted lines per comment in the review message; the rest is counted, and in the thread. */
const QUOTED_LINES_MAX = 20;

function where(row: ReviewCommentEntity): string {
  const lines = row.endLine === row.line ? `${row.line}` : `${row.line}-${row.endLine}`;
  return `${row.path}:${lines}${row.side === 'old' ? ' (before the change)' : ''}`;
}

function quote(excerpt: string): string {
  const lines = excerpt.split('\n');
  const shown = lines.slice(0, QUOTED_LINES_MAX).map((l) => `> ${l}`);
  if (lines.length > QUOTED_LINES_MAX) {
    shown.push(`> … (${lines.length - QUOTED_LINES_MAX} more lines)`);
  }
  return shown.join('\n');
}

/**
 * A review as the one message the agent reads (issue 46 §2): each comment as `path:line[-endLine]`
 * with its id, the quoted lines and the comment, then the overall comment, then how to answer a
 * thread. Plain Markdown: the same text the person sees in the conversation.
 */
export function reviewMessage(comments: readonly ReviewCommentEntity[], body: string | null): string {
  const count = comments.length === 1 ? '1 comment' : `${comments.length} comments`;
  const parts = [`Review of your changes: ${count}.`];
  comments.forEach((row, i) => {
    const outdated = row.outdated ? ' (outdated: these lines have changed since)' : '';
    parts.push(`${i + 1}. ${where(row)} (${row.id})${outdated}\n${quote(row.excerpt)}\n\n${row.body}`);
  });
  if (body !== null && body.trim() !== '') {
    parts.push(body);
  }
  parts.push(
    'Answer a comment in its thread with `code-factory-cli review reply --id <rvc_…> --body "…"` (add `--resolve` once it is done), or the reply_review_comment tool; `code-factory-cli review comments` lists them.',
  );
  return parts.join('\n\n');
}
