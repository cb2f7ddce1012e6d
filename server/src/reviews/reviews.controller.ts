import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import {
  CreateReviewRequestDto,
  CreateReviewResponseDto,
  ListReviewRequestsQueryDto,
  ReviewRequestPageDto,
} from './dto/review-request.dto';
import { ReviewsService } from './reviews.service';

@ApiTags('reviews')
@Controller()
export class ReviewsController {
  constructor(private readonly reviews: ReviewsService) {}

  @Post('pull-requests/:id/review-requests')
  @HttpCode(202)
  @ApiOperation({
    summary: "Ask an AI reviewer to review an open PR at its current head; the summary goes to the PR's Requirement",
  })
  @ApiAcceptedResponse({ type: CreateReviewResponseDto })
  @ApiBadRequestResponse()
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'The PR is not open, or a review of it is already running' })
  requestReview(
    @Param('id') id: string,
    @Body() body: CreateReviewRequestDto,
    @Actor() actor: EventActor,
  ): Promise<CreateReviewResponseDto> {
    return this.reviews.request(id, body, actor);
  }

  @Get('review-requests')
  @ApiOperation({ summary: 'List review requests, newest first' })
  @ApiOkResponse({ type: ReviewRequestPageDto })
  listReviewRequests(@Query() query: ListReviewRequestsQueryDto): Promise<ReviewRequestPageDto> {
    return this.reviews.list(query);
  }
}
