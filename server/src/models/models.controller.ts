import { Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import { ListModelsQueryDto, ModelCatalogResponseDto } from './dto/model-catalog.dto';
import { ModelCatalogService } from './model-catalog.service';

@ApiTags('models')
@Controller('models')
export class ModelsController {
  constructor(private readonly catalog: ModelCatalogService) {}

  @Get()
  @ApiOperation({ summary: 'The models and reasoning efforts each provider accepts (the model catalog)' })
  @ApiOkResponse({ type: ModelCatalogResponseDto })
  @ApiBadRequestResponse({ description: 'Unknown provider' })
  listModels(@Query() query: ListModelsQueryDto): Promise<ModelCatalogResponseDto> {
    return this.catalog.snapshot(query.provider);
  }

  @Post('refresh')
  @HttpCode(200)
  @ApiOperation({ summary: 'Ask every provider for its models again now; a failing source is served stale' })
  @ApiOkResponse({ type: ModelCatalogResponseDto })
  refreshModels(@Actor() actor: EventActor): Promise<ModelCatalogResponseDto> {
    return this.catalog.refresh(actor);
  }
}
