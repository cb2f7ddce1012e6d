import { Controller, Get, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import { AttentionListDto } from '../requirements/dto/attention.dto';
import { AttentionService } from './attention.service';
import { AttentionQueryDto } from './dto/attention-query.dto';

/** Needs you (issue 47): which Requirement needs its person, and why. */
@ApiTags('attention')
@Controller('attention')
export class AttentionController {
  constructor(private readonly attention: AttentionService) {}

  @Get()
  @ApiOperation({
    summary:
      'What needs a person now, oldest first: a question, work to review or confirm, a failure, a budget, a conflict, the queue, CI, the network…',
  })
  @ApiOkResponse({ type: AttentionListDto })
  @ApiBadRequestResponse({ description: 'person is neither "me" nor a person id' })
  list(@Query() query: AttentionQueryDto, @Actor() actor: EventActor): Promise<AttentionListDto> {
    return this.attention.list(query.person, actor);
  }
}
