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
import { ConversationDelivery } from './conversation-delivery.service';
import { ListMessagesQueryDto } from '../messages/dto/list-messages-query.dto';
import { MessagePageDto, ReplyResponseDto } from '../messages/dto/message-response.dto';
import { ReplyDto } from '../messages/dto/reply.dto';
import { MessagesService } from '../messages/messages.service';

@ApiTags('messages')
@Controller('requirements/:id')
export class MessagesController {
  constructor(
    private readonly conversation: ConversationDelivery,
    private readonly messages: MessagesService,
  ) {}

  @Get('messages')
  @ApiOperation({ summary: "The Requirement's conversation, ascending by sequence" })
  @ApiOkResponse({ type: MessagePageDto })
  @ApiNotFoundResponse()
  listMessages(@Param('id') id: string, @Query() query: ListMessagesQueryDto): Promise<MessagePageDto> {
    return this.messages.list(id, query);
  }

  @Post('reply')
  @HttpCode(202)
  @ApiOperation({ summary: 'Append a human message; it starts a run now or waits for the active one (queued)' })
  @ApiAcceptedResponse({ type: ReplyResponseDto })
  @ApiBadRequestResponse({ description: 'No text and no attachments, or bad attachment IDs' })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'The Requirement is cancelled' })
  async replyToRequirement(
    @Param('id') id: string,
    @Body() body: ReplyDto,
    @Actor() actor: EventActor,
  ): Promise<ReplyResponseDto> {
    const result = await this.conversation.reply(id, body, actor);
    return {
      accepted: true,
      action: 'reply',
      message: result.message,
      queued: result.queued,
      requirement: result.requirement,
      requirementId: id,
    };
  }
}
