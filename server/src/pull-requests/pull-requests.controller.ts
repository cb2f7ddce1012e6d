import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import { ListPullRequestsQueryDto, PullRequestPageDto } from './dto/pull-request.dto';
import { PullRequestsService } from './pull-requests.service';

@ApiTags('pull-requests')
@Controller('pull-requests')
export class PullRequestsController {
  constructor(private readonly pullRequests: PullRequestsService) {}

  @Get()
  @ApiOperation({ summary: 'List pull requests, newest first' })
  @ApiOkResponse({ type: PullRequestPageDto })
  listPullRequests(@Query() query: ListPullRequestsQueryDto): Promise<PullRequestPageDto> {
    return this.pullRequests.list(query);
  }
}
