import { Module } from '@nestjs/common';

import { DevicesController } from './devices.controller';
import { DevicesRepository } from './devices.repository';
import { DevicesService } from './devices.service';
import { PairingPageMiddleware } from './pairing-page.middleware';

/** Browsers paired with the manager (issue 47 §4). Owns `device` and `pairing_link`. */
@Module({
  controllers: [DevicesController],
  exports: [DevicesService, PairingPageMiddleware],
  providers: [DevicesRepository, DevicesService, PairingPageMiddleware],
})
export class DevicesModule {}
