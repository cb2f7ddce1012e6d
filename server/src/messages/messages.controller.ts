import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import { ListMessagesQueryDto } from './dto/list-messages-query.dto';
import { MessagePageDto } from './dto/message-response.dto';
import { MessagesService } from './messages.service';

@ApiTags('messages')
@Controller('requirements/:id')
export class MessagesController {
  constructor(private readonly messages: MessagesService) {}

  @Get('messages')
  @ApiOperation({ summary: "The Requirement's conversation, ascending by sequence" })
  @ApiOkResponse({ type: MessagePageDto })
  @ApiNotFoundResponse()
  listMessages(@Param('id') id: string, @Query() query: ListMessagesQueryDto): Promise<MessagePageDto> {
    return this.messages.list(id, query);
  }
}
