import { Body, Controller, Param, Put } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import { RequirementResponseDto } from '../requirements/dto/requirement-response.dto';
import { DependenciesService } from './dependencies.service';
import { SetDependenciesDto } from '../requirements/dto/dependency.dto';

@ApiTags('requirements')
@Controller('requirements')
export class DependenciesController {
  constructor(private readonly dependencies: DependenciesService) {}

  @Put(':id/dependencies')
  @ApiOperation({ summary: 'Replace what a Requirement waits for (no cycles; an unmet dependency refuses its start)' })
  @ApiOkResponse({ type: RequirementResponseDto })
  @ApiBadRequestResponse({
    description: 'A cycle (dependency_cycle), an unknown Requirement (dependency_not_found) or a duplicate',
  })
  @ApiNotFoundResponse()
  @ApiConflictResponse({ description: 'The Requirement is done or cancelled' })
  setDependencies(
    @Param('id') id: string,
    @Body() body: SetDependenciesDto,
    @Actor() actor: EventActor,
  ): Promise<RequirementResponseDto> {
    return this.dependencies.set(id, body, actor);
  }
}
