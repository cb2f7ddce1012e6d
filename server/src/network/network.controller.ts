import { Body, Controller, Get, Param, Put, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import type { EventActor } from '@libs/contracts';

import { Actor } from '../core/http/actor.decorator';
import {
  NetworkBlockedListDto,
  NetworkBlockedQueryDto,
  NetworkStatusDto,
  RequirementNetworkDto,
  UpdateRequirementNetworkDto,
} from './dto/network.dto';
import { NetworkService } from './network.service';

/** What agent runs may reach, and what they were refused (issue 45). The person's routes: no run credential reaches them. */
@ApiTags('network')
@Controller()
export class NetworkController {
  constructor(private readonly network: NetworkService) {}

  @Get('network')
  @ApiOperation({ summary: "Agent runs' network: the mode, whether it is isolated here, the defaults and the lists" })
  @ApiOkResponse({ type: NetworkStatusDto })
  status(): Promise<NetworkStatusDto> {
    return this.network.status();
  }

  @Get('network/blocked')
  @ApiOperation({
    summary: "Connections agent runs' proxies refused, counted per run, host and port; most recent first",
  })
  @ApiOkResponse({ type: NetworkBlockedListDto })
  @ApiBadRequestResponse()
  blocked(@Query() query: NetworkBlockedQueryDto): Promise<NetworkBlockedListDto> {
    return this.network.blocked(query);
  }

  @Get('requirements/:id/network')
  @ApiOperation({ summary: "A Requirement's own allowed hosts and what its runs were refused" })
  @ApiOkResponse({ type: RequirementNetworkDto })
  @ApiNotFoundResponse()
  requirementNetwork(@Param('id') id: string): Promise<RequirementNetworkDto> {
    return this.network.requirementNetwork(id);
  }

  @Put('requirements/:id/network')
  @ApiOperation({
    summary:
      "Set the hosts a Requirement's runs may reach besides the workspace allow-list (the person's choice; applied to the next connection)",
  })
  @ApiOkResponse({ type: RequirementNetworkDto })
  @ApiBadRequestResponse({ description: 'An entry that is not a host, named' })
  @ApiNotFoundResponse()
  setRequirementNetwork(
    @Param('id') id: string,
    @Body() body: UpdateRequirementNetworkDto,
    @Actor() actor: EventActor,
  ): Promise<RequirementNetworkDto> {
    return this.network.setRequirementAllow(id, body, actor);
  }
}
