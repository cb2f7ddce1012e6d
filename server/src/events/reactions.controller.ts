import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import { EventsRepository } from './events.repository';
import { ReactionsResponseDto, toReactionResponse } from './dto/reactions-response.dto';
import { Reactions } from './reactions.service';

@ApiTags('system')
@Controller('system')
export class ReactionsController {
  constructor(
    private readonly events: EventsRepository,
    private readonly reactions: Reactions,
  ) {}

  @Get('reactions')
  @ApiOperation({
    summary:
      "The features' reactions to committed events: how far each got through the event log, its backlog, and its last failure",
  })
  @ApiOkResponse({ type: ReactionsResponseDto })
  async listReactions(): Promise<ReactionsResponseDto> {
    const [reactions, lastEventId] = await Promise.all([this.reactions.status(), this.events.lastId()]);
    return { lastEventId, reactions: reactions.map(toReactionResponse) };
  }
}
