import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { AgentCaller, CurrentAgentCaller, assertInScope } from '../auth/agent-scope.decorator';
import { Actor } from '../core/http/actor.decorator';
import {
  ReplyToReviewCommentDto,
  ReviewCommentDto,
  ReviewCommentListDto,
} from '../review-comments/dto/review-comment.dto';
import { ReviewCommentsService } from '../review-comments/review-comments.service';

const OUTSIDE_SCOPE = "Not the run credential's own Requirement (the owner's token may name any)";

/** The review threads a person sent to the run's own Requirement, and the agent's answers in them. */
@ApiTags('agent')
@Controller('agent/requirements/:id/review-comments')
export class AgentReviewCommentsController {
  constructor(private readonly reviewComments: ReviewCommentsService) {}

  @Get()
  @ApiOperation({ summary: "The review comments sent to the run's Requirement, with their threads (drafts are not)" })
  @ApiOkResponse({ type: ReviewCommentListDto })
  @ApiForbiddenResponse({ description: OUTSIDE_SCOPE })
  @ApiNotFoundResponse()
  async agentReviewComments(
    @Param('id') id: string,
    @CurrentAgentCaller() caller: AgentCaller,
  ): Promise<ReviewCommentListDto> {
    assertInScope(caller, { requirementId: id });
    return { items: await this.reviewComments.listSent(id) };
  }

  @Post(':commentId/replies')
  @ApiOperation({ summary: "Answer a review comment's thread (as the agent), and resolve it with `resolve`" })
  @ApiCreatedResponse({ type: ReviewCommentDto })
  @ApiBadRequestResponse()
  @ApiForbiddenResponse({ description: OUTSIDE_SCOPE })
  @ApiNotFoundResponse({ description: 'No such comment sent to this Requirement' })
  @ApiConflictResponse({ description: 'too_many_replies' })
  replyToReviewComment(
    @Param('id') id: string,
    @Param('commentId') commentId: string,
    @Body() body: ReplyToReviewCommentDto,
    @CurrentAgentCaller() caller: AgentCaller,
    @Actor() actor: EventActor,
  ): Promise<ReviewCommentDto> {
    assertInScope(caller, { requirementId: id });
    return this.reviewComments.reply(id, commentId, body, actor);
  }
}
