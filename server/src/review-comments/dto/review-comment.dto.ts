import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsInt, Max, Min, ValidateIf } from 'class-validator';

import {
  LIMITS,
  REVIEW_AUTHOR_KINDS,
  REVIEW_COMMENT_SIDES,
  REVIEW_COMMENT_STATES,
  ReviewAuthor,
  ReviewAuthorKind,
  ReviewComment,
  ReviewCommentAnchor,
  ReviewCommentReply,
  ReviewCommentSide,
  ReviewCommentState,
} from '@libs/contracts';

import { OptionalEnum, OptionalIdList, OptionalInt, OptionalText, ValidateText } from '../../core/validation';
import type { ReviewCommentEntity, ReviewReplyEntity } from '../review-comment.entities';

/** The longest line number a comment may name (far past any file a diff shows). */
const LINE_MAX = 10_000_000;
/** A comment's path: a path inside the repository, as the Changes list names it. */
const PATH_MAX = 4096;

const commentText = (description: string) =>
  ValidateText({ description, max: LIMITS.reviewCommentBytes, min: 1, pattern: /\S/ });

export class CreateReviewCommentDto {
  @ValidateText({ description: "A changed file's path, as the Changes list names it", max: PATH_MAX, min: 1 })
  path!: string;

  @ApiProperty({ description: 'First line, numbered on `side`', maximum: LINE_MAX, minimum: 1 })
  @IsInt()
  @Min(1)
  @Max(LINE_MAX)
  line!: number;

  @OptionalInt({ description: 'Last line of a range (default: `line`)', max: LINE_MAX, min: 1 })
  endLine?: number;

  @OptionalEnum(REVIEW_COMMENT_SIDES, "`new` (default): the agent's work; `old`: the merge base (a removed line)")
  side?: ReviewCommentSide;

  @commentText(`The comment, in Markdown (at most ${LIMITS.reviewCommentBytes} bytes)`)
  body!: string;
}

export class UpdateReviewCommentDto {
  @OptionalText({
    description: "A draft's new text",
    max: LIMITS.reviewCommentBytes,
    min: 1,
    pattern: /\S/,
  })
  body?: string;

  @OptionalEnum(['resolved', 'open'], 'Resolve a sent thread, or reopen a resolved one')
  state?: 'resolved' | 'open';
}

export class ListReviewCommentsQueryDto {
  @OptionalEnum(REVIEW_COMMENT_STATES, 'Only the comments in this state')
  state?: ReviewCommentState;

  @OptionalEnum(['true', 'false'], 'Only the outdated ones (true), or those that follow the code (false)')
  outdated?: 'true' | 'false';
}

export class SendReviewDto {
  @OptionalText({
    description: 'The overall comment, after the line comments',
    max: LIMITS.reviewCommentBytes,
    pattern: /\S/,
  })
  body?: string;

  @OptionalIdList({
    description: 'The drafts to send (default: every draft)',
    max: LIMITS.reviewCommentsPerRequirement,
  })
  commentIds?: string[];
}

export class ReplyToReviewCommentDto {
  @ValidateText({
    description: `The answer, in Markdown (at most ${LIMITS.reviewReplyBytes} bytes)`,
    max: LIMITS.reviewReplyBytes,
    min: 1,
    pattern: /\S/,
  })
  body!: string;

  @ApiPropertyOptional({ description: 'Resolve the thread with this answer (false when absent)' })
  @ValidateIf((_o, v) => v !== undefined)
  @IsBoolean()
  resolve?: boolean;
}

export class ReviewAuthorDto implements ReviewAuthor {
  @ApiProperty({ enum: REVIEW_AUTHOR_KINDS }) kind!: ReviewAuthorKind;
  @ApiProperty({ description: "The person's stable id, or the agent's run", nullable: true, type: String }) id!:
    string | null;
  @ApiProperty({ nullable: true, type: String }) name!: string | null;
}

export class ReviewCommentAnchorDto implements ReviewCommentAnchor {
  @ApiProperty({ description: 'The commit the quoted lines were read from (the imported work, or the merge base)' })
  commit!: string;
  @ApiProperty({ description: 'The lines quoted, joined by newlines' }) excerpt!: string;
}

export class ReviewCommentReplyDto implements ReviewCommentReply {
  @ApiProperty({ example: 'rvr_…' }) id!: string;
  @ApiProperty({ type: ReviewAuthorDto }) author!: ReviewAuthorDto;
  @ApiProperty() body!: string;
  @ApiProperty() createdAt!: string;
}

export class ReviewCommentDto implements ReviewComment {
  @ApiProperty({ example: 'rvc_…' }) id!: string;
  @ApiProperty() requirementId!: string;
  @ApiProperty() path!: string;
  @ApiProperty() line!: number;
  @ApiProperty() endLine!: number;
  @ApiProperty({ enum: REVIEW_COMMENT_SIDES }) side!: ReviewCommentSide;
  @ApiProperty() body!: string;
  @ApiProperty({ enum: REVIEW_COMMENT_STATES }) state!: ReviewCommentState;
  @ApiProperty({ description: 'An import changed its lines: it stays as written, with the lines it quoted' })
  outdated!: boolean;
  @ApiProperty({ type: ReviewCommentAnchorDto }) anchor!: ReviewCommentAnchorDto;
  @ApiProperty({ type: ReviewAuthorDto }) author!: ReviewAuthorDto;
  @ApiProperty({ description: 'The review message that sent it', nullable: true, type: String }) messageId!:
    string | null;
  @ApiProperty({ nullable: true, type: String }) sentAt!: string | null;
  @ApiProperty({ type: [ReviewCommentReplyDto] }) replies!: ReviewCommentReplyDto[];
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;
}

export class ReviewCommentListDto {
  @ApiProperty({ type: [ReviewCommentDto] }) items!: ReviewCommentDto[];
}

export function toReviewAuthor(
  row: Pick<ReviewCommentEntity, 'authorId' | 'authorKind' | 'authorName'>,
): ReviewAuthorDto {
  return { id: row.authorId, kind: row.authorKind, name: row.authorName };
}

export function toReviewComment(row: ReviewCommentEntity, replies: readonly ReviewReplyEntity[]): ReviewCommentDto {
  return {
    anchor: { commit: row.anchorCommit, excerpt: row.excerpt },
    author: toReviewAuthor(row),
    body: row.body,
    createdAt: row.createdAt,
    endLine: row.endLine,
    id: row.id,
    line: row.line,
    messageId: row.messageId,
    outdated: Boolean(row.outdated),
    path: row.path,
    replies: replies
      .filter((r) => r.commentId === row.id)
      .map((r) => ({ author: toReviewAuthor(r), body: r.body, createdAt: r.createdAt, id: r.id })),
    requirementId: row.requirementId,
    sentAt: row.sentAt,
    side: row.side,
    state: row.state,
    updatedAt: row.updatedAt,
  };
}
