import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import {
  CreateReviewCommentDto,
  ListReviewCommentsQueryDto,
  ReviewCommentDto,
  ReviewCommentListDto,
  SendReviewDto,
  UpdateReviewCommentDto,
} from './dto/review-comment.dto';
import { SentReviewResponseDto } from './dto/sent-review.dto';
import { ReviewCommentsService } from './review-comments.service';
import { MarkViewedDto, ViewedFilesDto } from './dto/viewed-files.dto';
import { ViewedFiles } from './viewed-files.service';

/** A person's review of a Requirement's changes: comments on lines, sent to its agent as one review. */
@ApiTags('review comments')
@Controller('requirements/:id')
export class ReviewCommentsController {
  constructor(
    private readonly reviewComments: ReviewCommentsService,
    private readonly viewed: ViewedFiles,
  ) {}

  @Get('viewed-files')
  @ApiOperation({ summary: 'The changed files and which of them you viewed as they are now ("4 of 12 files viewed")' })
  @ApiOkResponse({ type: ViewedFilesDto })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'No worktree to compare' })
  listViewedFiles(@Param('id') id: string, @Actor() actor: EventActor): Promise<ViewedFilesDto> {
    return this.viewed.list(id, actor);
  }

  @Put('viewed-files')
  @ApiOperation({ summary: 'Mark a changed file viewed as it is now (a change to it clears the mark), or not viewed' })
  @ApiOkResponse({ type: ViewedFilesDto })
  @ApiBadRequestResponse({ description: 'not_in_diff: the path is not among the changes' })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'No worktree to compare' })
  markViewedFile(
    @Param('id') id: string,
    @Body() body: MarkViewedDto,
    @Actor() actor: EventActor,
  ): Promise<ViewedFilesDto> {
    return this.viewed.mark(id, body, actor);
  }

  @Get('review-comments')
  @ApiOperation({ summary: "The Requirement's review comments and their threads, oldest first" })
  @ApiOkResponse({ type: ReviewCommentListDto })
  @ApiNotFoundResponse()
  async listReviewComments(
    @Param('id') id: string,
    @Query() query: ListReviewCommentsQueryDto,
  ): Promise<ReviewCommentListDto> {
    const outdated = query.outdated === undefined ? undefined : query.outdated === 'true';
    return { items: await this.reviewComments.list(id, query.state, outdated) };
  }

  @Post('review-comments')
  @ApiOperation({
    summary:
      "Draft a comment on lines of the Requirement's changes (side new: its work; old: the merge base); it quotes them",
  })
  @ApiCreatedResponse({ type: ReviewCommentDto })
  @ApiBadRequestResponse({
    description: 'not_in_diff: the path or lines are not in its diff; an empty or too long body',
  })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'No worktree to compare, the Requirement is cancelled, or too many comments' })
  createReviewComment(
    @Param('id') id: string,
    @Body() body: CreateReviewCommentDto,
    @Actor() actor: EventActor,
  ): Promise<ReviewCommentDto> {
    return this.reviewComments.create(id, body, actor);
  }

  @Patch('review-comments/:commentId')
  @ApiOperation({ summary: "Edit a draft's text, or resolve or reopen a sent thread" })
  @ApiOkResponse({ type: ReviewCommentDto })
  @ApiBadRequestResponse()
  @ApiNotFoundResponse()
  @ApiConflictResponse({
    description: 'comment_not_draft: only a draft is edited; comment_not_sent: a draft is not resolved',
  })
  updateReviewComment(
    @Param('id') id: string,
    @Param('commentId') commentId: string,
    @Body() body: UpdateReviewCommentDto,
    @Actor() actor: EventActor,
  ): Promise<ReviewCommentDto> {
    return this.reviewComments.update(id, commentId, body, actor);
  }

  @Delete('review-comments/:commentId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a comment never sent' })
  @ApiNoContentResponse()
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'comment_not_draft: it was sent (resolve it instead)' })
  async deleteReviewComment(
    @Param('id') id: string,
    @Param('commentId') commentId: string,
    @Actor() actor: EventActor,
  ): Promise<void> {
    await this.reviewComments.remove(id, commentId, actor);
  }

  @Post('reviews')
  @HttpCode(202)
  @ApiOperation({
    summary:
      'Send the drafts (every one, or commentIds) and an overall comment as one message, delivered as a reply is',
  })
  @ApiAcceptedResponse({ type: SentReviewResponseDto })
  @ApiBadRequestResponse({ description: 'review_too_large: over one message; fewer commentIds' })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'no_draft_comments: nothing to send; comment_not_draft; requirement_cancelled' })
  async sendReview(
    @Param('id') id: string,
    @Body() body: SendReviewDto,
    @Actor() actor: EventActor,
  ): Promise<SentReviewResponseDto> {
    const sent = await this.reviewComments.send(id, body, actor);
    return { accepted: true, requirementId: id, ...sent };
  }
}
