import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';

import type { Device, Pairing } from '@libs/contracts';

import { DEVICE_NAME_MAX } from '../devices.service';

export class DeviceDto implements Device {
  @ApiProperty({ example: 'dev_3e1f…' }) id!: string;
  @ApiProperty({ example: 'Phone' }) name!: string;
  @ApiProperty({ description: "The pairing browser's User-Agent", nullable: true, type: String })
  userAgent!: string | null;
  @ApiProperty() pairedAt!: string;
  @ApiProperty({ description: 'Its last request, to the minute', nullable: true, type: String })
  lastSeenAt!: string | null;
  @ApiProperty({ description: 'The device that asks' }) current!: boolean;
}

export class DeviceListDto {
  @ApiProperty({ type: [DeviceDto] }) items!: DeviceDto[];
}

export class CreatePairingDto {
  @ApiPropertyOptional({
    description: 'What to call the device (the phone may rename it when it pairs)',
    maxLength: DEVICE_NAME_MAX,
  })
  @IsOptional()
  @IsString()
  @MaxLength(DEVICE_NAME_MAX)
  name?: string | null;
}

export class PairingDto implements Pairing {
  @ApiProperty({ example: 'pair_3e1f…' }) id!: string;
  @ApiProperty({ description: 'The one-time link: opened on the phone, it pairs that browser (10 minutes)' })
  url!: string;
  @ApiProperty({ description: 'The link as a QR code (an SVG image as a data: URL)' }) qrCode!: string;
  @ApiProperty() name!: string;
  @ApiProperty() expiresAt!: string;
  @ApiProperty({
    description: 'Why a phone may not reach the link as the manager is served (loopback only), or null',
    nullable: true,
    type: String,
  })
  reachability!: string | null;
}
