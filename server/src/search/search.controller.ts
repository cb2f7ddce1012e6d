import { Controller, Get, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import { SearchPageDto, SearchQueryDto } from './dto/search.dto';
import { SearchService } from './search.service';

@ApiTags('search')
@Controller('search')
export class SearchController {
  constructor(private readonly search: SearchService) {}

  @Get()
  @ApiOperation({ summary: 'Search titles, descriptions and every conversation message, best match first' })
  @ApiOkResponse({ type: SearchPageDto })
  @ApiBadRequestResponse({
    description: 'No word to search for, too many words, or a cursor this server did not issue',
  })
  find(@Query() query: SearchQueryDto): Promise<SearchPageDto> {
    return this.search.search(query);
  }
}
