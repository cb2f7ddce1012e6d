import { Body, Controller, Delete, Get, HttpCode, Param, Post, Req } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';

import type { ActorRequest } from '../core/http/actor.decorator';
import { CreatePairingDto, DeviceListDto, PairingDto } from './dto/devices.dto';
import { DevicesService } from './devices.service';

/** Browsers paired with the manager (issue 47 §4). Only the owner pairs; a device may list and revoke. */
@ApiTags('devices')
@Controller('devices')
export class DevicesController {
  constructor(private readonly devices: DevicesService) {}

  @Get()
  @ApiOperation({ summary: 'The paired devices, oldest first' })
  @ApiOkResponse({ type: DeviceListDto })
  async listDevices(@Req() req: ActorRequest): Promise<DeviceListDto> {
    return { items: await this.devices.list(req.device?.id) };
  }

  @Post('pairings')
  @ApiOperation({
    summary: 'A one-time pairing link and its QR code, valid 10 minutes (the owner only, never a device)',
  })
  @ApiCreatedResponse({ type: PairingDto })
  @ApiForbiddenResponse({ description: 'Asked by a paired device' })
  createPairing(@Body() body: CreatePairingDto, @Req() req: ActorRequest): Promise<PairingDto> {
    return this.devices.createPairing(body.name, req.headers.host, req.socket.localPort ?? 0);
  }

  @Delete('pairings/:id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Cancels a pairing link before it expires: it answers 410 from then on (unused or not)' })
  @ApiNoContentResponse()
  @ApiNotFoundResponse({ description: 'No pairing link of that id' })
  async cancelPairing(@Param('id') id: string): Promise<void> {
    await this.devices.cancelPairing(id);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revokes a device at once: its next request is refused, its open streams end' })
  @ApiNoContentResponse()
  @ApiNotFoundResponse({ description: 'No paired device of that id' })
  async revokeDevice(@Param('id') id: string, @Req() req: ActorRequest): Promise<void> {
    await this.devices.revoke(id, req.res);
  }
}
