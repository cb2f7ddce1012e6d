import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { ReviewAuthorKind, ReviewCommentSide, ReviewCommentState } from '@libs/contracts';

/** A comment on lines of a Requirement's changes (issue 46): the thread's first entry. */
@Entity('review_comment')
@Index('review_comment_requirement', ['requirementId', 'createdAt'])
export class ReviewCommentEntity {
  @PrimaryColumn('varchar') id!: string;
  @Column('varchar') requirementId!: string;
  @Column('text') path!: string;
  @Column('integer') line!: number;
  @Column('integer') endLine!: number;
  @Column('varchar') side!: ReviewCommentSide;
  @Column('text') body!: string;
  @Column('varchar') state!: ReviewCommentState;
  /** An import changed its lines: no longer moved with the code. */
  @Column('boolean') outdated!: boolean;
  /** The commit the quoted lines were read from (moved by each re-anchoring). */
  @Column('varchar') anchorCommit!: string;
  /** The quoted lines, joined by newlines (as written, once outdated). */
  @Column('text') excerpt!: string;
  @Column('varchar') authorKind!: ReviewAuthorKind;
  @Column('varchar', { nullable: true }) authorId!: string | null;
  @Column('varchar', { nullable: true }) authorName!: string | null;
  /** The review message that sent it; null while a draft. */
  @Column('varchar', { nullable: true }) messageId!: string | null;
  @Column('varchar', { nullable: true }) sentAt!: string | null;
  @Column('varchar') createdAt!: string;
  @Column('varchar') updatedAt!: string;
}

/**
 * A changed file a person marked viewed, at the content it had then (its blob in the agent's
 * work): it is viewed while the file still has that content, as GitHub does.
 */
@Entity('review_viewed_file')
export class ReviewViewedFileEntity {
  @PrimaryColumn('varchar') requirementId!: string;
  @PrimaryColumn('varchar') personId!: string;
  @PrimaryColumn('text') path!: string;
  @Column('varchar') blob!: string;
  @Column('varchar') viewedAt!: string;
}

/** A reply in a review comment's thread. */
@Entity('review_comment_reply')
@Index('review_comment_reply_comment', ['commentId', 'createdAt'])
export class ReviewReplyEntity {
  @PrimaryColumn('varchar') id!: string;
  @Column('varchar') commentId!: string;
  @Column('varchar') requirementId!: string;
  @Column('varchar') authorKind!: ReviewAuthorKind;
  @Column('varchar', { nullable: true }) authorId!: string | null;
  @Column('varchar', { nullable: true }) authorName!: string | null;
  @Column('text') body!: string;
  @Column('varchar') createdAt!: string;
}
